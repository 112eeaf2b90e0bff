/**
 * The blocks sink (docs/backfill.md, "Blocks"): each window's samples as OpenMetrics text
 * (openmetrics.ts), made into one TSDB block by promtool, then deleted. One window per file:
 * promtool reads its whole input once per block it writes. promtool turns a window into a block
 * while the next one is written: at most two window files are on disk at a time. Without promtool
 * the files stay in --out and the command prints the loop to run.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatDuration } from '../config/durations.js';
import { OpenMetricsWriter } from './openmetrics.js';
import { WRITTEN_FAMILIES } from './coverage.js';
import type { Line } from './replay.js';
import { WINDOW_SECONDS, type Sink, type SinkWindow } from './write.js';

export const PROMTOOL_BLOCK_DURATION = formatDuration(WINDOW_SECONDS);

const iso = (s: number) => new Date(s * 1000).toISOString();

/** One promtool run over one window's file: resolves with its time, rejects naming the file. */
function promtoolRun(promtool: string, path: string, out: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(promtool, ['tsdb', 'create-blocks-from', 'openmetrics', `--max-block-duration=${PROMTOOL_BLOCK_DURATION}`, '--quiet', path, out], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString('utf8')).slice(-4000);
    });
    child.once('error', (e) => reject(new Error(`promtool could not be started (${promtool}): ${e.message}`)));
    child.once('exit', (code, signal) => {
      if (code === 0) {
        rmSync(path, { force: true });
        resolve(Number(process.hrtime.bigint() - t0) / 1e9);
      } else {
        const why = stderr.trim().split('\n').slice(-5).join('\n') || `exit ${String(code ?? signal)}`;
        reject(new Error(`promtool failed on ${path} (kept for inspection): ${why}`));
      }
    });
  });
}

export class BlocksSink implements Sink {
  readonly kind = 'blocks' as const;
  runs = 0;
  promtoolSeconds = 0;
  files = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly work: string;

  constructor(
    private readonly out: string,
    private readonly promtool: string | undefined,
  ) {
    this.work = promtool ? tmpdir() : out;
  }

  open(start: number): SinkWindow {
    const writer = new OpenMetricsWriter(WRITTEN_FAMILIES, this.work);
    // Several passes over one window (units read later) each make a file, and a block, of their own.
    const path = join(this.work, `cmdb-backfill-${iso(start).replace(/[:.]/g, '-')}-${Date.now().toString(36)}.om`);
    return {
      add: (line: Line, _stack: string, t: number) => writer.add(line.family, line.text, t),
      discard: () => writer.discard(),
      finish: async () => {
        const samples = writer.total;
        if (samples === 0) {
          writer.discard();
          return { samples: 0, bytes: 0, safe: Promise.resolve() };
        }
        const bytes = writer.finish(path);
        this.files += 1;
        const promtool = this.promtool;
        if (!promtool) return { samples, bytes, safe: Promise.resolve() };
        const safe = this.chain.then(async () => {
          this.promtoolSeconds += await promtoolRun(promtool, path, this.out);
          this.runs += 1;
        });
        this.chain = safe.catch(() => undefined);
        return { samples, bytes, safe };
      },
    };
  }

  async close(): Promise<void> {
    // promtool runs are short (one window); a stop lets the one in flight finish, so its block is whole.
    await this.chain;
  }

  /** What to run when promtool was not found. */
  static commandFor(out: string): string {
    return `for f in ${join(out, '*.om')}; do promtool tsdb create-blocks-from openmetrics --max-block-duration=${PROMTOOL_BLOCK_DURATION} "$f" ${out} && rm "$f"; done`;
  }
}
