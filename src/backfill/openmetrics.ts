/**
 * OpenMetrics text as `promtool tsdb create-blocks-from openmetrics` reads it: one family's lines
 * together under its `# TYPE`, each series' samples in increasing time, timestamps in seconds, and
 * `# EOF` last. Lines arrive step by step, every family mixed; each family's lines go to a file
 * of their own as they come (a small buffer each), and `finish` joins the files in family order.
 * Memory is the buffers, whatever the number of samples.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { escapeOpenMetricsHelp } from '../exposition/openmetrics-format.js';
import type { MetricFamily } from '../metrics/catalogue.js';

const FLUSH_CHARS = 256 * 1024;
const COPY_BYTES = 1024 * 1024;

export class OpenMetricsWriter {
  private readonly dir: string;
  private readonly fds: Array<number | undefined>;
  /** Lines not yet in the family's file. */
  private readonly pending: string[];
  /** Samples added. */
  total = 0;
  private closed = false;

  constructor(
    private readonly families: readonly MetricFamily[],
    workDir: string,
  ) {
    this.dir = mkdtempSync(join(workDir, 'cmdb-backfill-'));
    this.fds = families.map(() => undefined);
    this.pending = families.map(() => '');
  }

  /** One sample: `text` is `name{labels} value`, `t` unix seconds; each series' samples in increasing time. */
  add(family: number, text: string, t: number): void {
    const pending = `${this.pending[family] as string}${text} ${t}\n`;
    this.pending[family] = pending;
    this.total += 1;
    if (pending.length >= FLUSH_CHARS) this.flush(family);
  }

  private flush(family: number): void {
    const pending = this.pending[family] as string;
    if (pending === '') return;
    let fd = this.fds[family];
    if (fd === undefined) this.fds[family] = fd = openSync(join(this.dir, String(family)), 'w');
    writeSync(fd, pending);
    this.pending[family] = '';
  }

  /** Writes the OpenMetrics file to `path` (each family under its HELP and TYPE, then `# EOF`); returns its bytes. */
  finish(path: string): number {
    if (this.closed) throw new Error('OpenMetricsWriter.finish called twice');
    this.closed = true;
    const out = openSync(path, 'w');
    let bytes = 0;
    const buffer = Buffer.allocUnsafe(COPY_BYTES);
    try {
      this.families.forEach((f, i) => {
        this.flush(i);
        const fd = this.fds[i];
        // No file: the family has no samples, and no header.
        if (fd === undefined) return;
        bytes += writeSync(out, `# HELP ${f.name} ${escapeOpenMetricsHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n`);
        closeSync(fd);
        const input = openSync(join(this.dir, String(i)), 'r');
        try {
          for (let n = readSync(input, buffer, 0, COPY_BYTES, null); n > 0; n = readSync(input, buffer, 0, COPY_BYTES, null)) {
            bytes += writeSync(out, buffer, 0, n);
          }
        } finally {
          closeSync(input);
        }
      });
      bytes += writeSync(out, '# EOF\n');
    } finally {
      closeSync(out);
      this.discard();
    }
    return bytes;
  }

  /** Removes the per-family files (also after a failure). */
  discard(): void {
    this.closed = true;
    for (const fd of this.fds) {
      if (fd === undefined) continue;
      try {
        closeSync(fd);
      } catch {
        // already closed by finish
      }
    }
    this.fds.fill(undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
