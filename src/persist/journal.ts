/**
 * A journal: a file of lines appended one record at a time (the daemon's request record, the
 * backfill's answers), readable by the exporter's user only (0600). Each record is one line,
 * written whole by one write(2): a process killed mid-write leaves at most its last line cut
 * short, which a read ignores. Its durability is stated when it is opened:
 * - `process`: a line is in the kernel's hands once appended, so a kill -9 keeps it; a power loss
 *   may lose the last seconds of lines;
 * - `disk`: each line is flushed to the disk (fsync) before append returns, so a power loss keeps it.
 * A journal is cut back by replacing it whole, atomically (atomic.ts), and appended to from there.
 */
import { closeSync, fchmodSync, fsyncSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { FILE_MODE, writeAtomicSync } from './atomic.js';

export type Durability = 'process' | 'disk';

/** What a journal held: its whole lines, none (no file), or not known (unreadable). */
export type LinesRead = { readonly kind: 'read'; readonly lines: readonly string[] } | { readonly kind: 'missing' } | { readonly kind: 'unreadable'; readonly reason: string };

/** The whole lines of the journal at `path`; a last line cut short (a kill mid-write) is left out. */
export function readLines(path: string): LinesRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'unreadable', reason: (err as Error).message };
  }
  const lines = text.split('\n');
  // Whatever follows the last newline was being written when the process ended.
  lines.pop();
  return { kind: 'read', lines };
}

export class Journal {
  private fd: number | undefined;
  /** Bytes in the file since it was opened or cut back. */
  bytes = 0;

  constructor(
    readonly path: string,
    readonly durability: Durability,
  ) {}

  /** Opens the journal to append to it (made when missing). */
  open(): this {
    if (this.fd !== undefined) return this;
    this.fd = openSync(this.path, 'a', FILE_MODE);
    // A file an earlier version made keeps its mode: the exporter's user's alone from now on.
    fchmodSync(this.fd, FILE_MODE);
    return this;
  }

  /** Appends one record (a line without a newline); throws when the write fails. */
  append(line: string): void {
    if (this.fd === undefined) this.open();
    const fd = this.fd as number;
    this.bytes += writeSync(fd, `${line}\n`);
    if (this.durability === 'disk') fsyncSync(fd);
  }

  /** Replaces the journal with `lines`, atomically, and appends to it from there. */
  replace(lines: readonly string[]): void {
    const text = lines.map((l) => `${l}\n`).join('');
    try {
      writeAtomicSync(this.path, text);
    } finally {
      // The file in place may be the new one even when the write failed (renamed, the folder not
      // flushed): the next append opens whatever is there now, never the one renamed over.
      this.close();
    }
    this.bytes = Buffer.byteLength(text);
    this.open();
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /** Closes and deletes the journal. */
  remove(): void {
    this.close();
    rmSync(this.path, { force: true });
  }
}
