/**
 * The request record: `<dir>/budget.log`, a journal (journal.ts, durability `process`) of one line
 * per request a budget lets leave (`<send time in ms>\t<stack>`), appended just before it is handed
 * to its connection, so that a restart's budget counts what the earlier process sent in its last
 * minute, also after a kill -9 (docs/restarts.md). Appends are synchronous: an asynchronous one
 * could still be queued when the request leaves, and a kill then would lose it.
 */
import { join } from 'node:path';
import { Journal, readLines } from './journal.js';

export const JOURNAL_FILE = 'budget.log';
/** The record is cut back to the sends of the last minute once it grows past this. */
export const ROTATE_BYTES = 64 * 1024;
/** Sends kept when read and when cut back: more than the budget's window (60 s and a margin), which filters them again. */
const WINDOW_MS = 120_000;
const LINE = /^(\d{1,15})\t([A-Za-z0-9][A-Za-z0-9_.:-]*)$/;

/** What the record said: the sends of the last minute per stack, none (no file), or not known (unreadable). */
export type JournalRead = { readonly kind: 'read'; readonly sends: ReadonlyMap<string, number[]> } | { readonly kind: 'missing' } | { readonly kind: 'unreadable'; readonly reason: string };

/** Reads the record; sends older than a minute before `nowMs` are left out. A last line cut short (a kill mid-write) is ignored. */
export function readJournal(dir: string, nowMs: number): JournalRead {
  const read = readLines(join(dir, JOURNAL_FILE));
  if (read.kind !== 'read') return read;
  const sends = new Map<string, number[]>();
  for (const [i, line] of read.lines.entries()) {
    const m = LINE.exec(line);
    if (!m) return { kind: 'unreadable', reason: `line ${i + 1} is not <milliseconds><tab><stack>` };
    const at = Number(m[1]);
    if (at <= nowMs - WINDOW_MS) continue;
    const stack = m[2] as string;
    sends.set(stack, [...(sends.get(stack) ?? []), at]);
  }
  return { kind: 'read', sends };
}

export interface JournalOptions {
  readonly dir: string;
  /** The sends of the last minute (and those still waiting) of every stack: what a cut-back record keeps. */
  readonly current: () => ReadonlyMap<string, readonly number[]>;
  /** A write failed: the writer counts and logs it. */
  readonly failed: (stack: string, err: unknown) => void;
}

export class SendJournal {
  private readonly journal: Journal;
  private started = false;

  constructor(private readonly opts: JournalOptions) {
    this.journal = new Journal(join(opts.dir, JOURNAL_FILE), 'process');
  }

  /**
   * Starts a fresh record with the sends of the last minute (those restored included). Throws when
   * the directory is not writable; the requests are appended from then on all the same (each failed
   * append is told to `failed`), so a folder that is writable again is written again.
   */
  start(): void {
    this.started = true;
    this.rotate();
  }

  /** A request of `stack` leaves at `atMs`. */
  record(stack: string, atMs: number): void {
    if (!this.started) return;
    try {
      this.journal.append(`${Math.round(atMs)}\t${stack}`);
      if (this.journal.bytes > ROTATE_BYTES) this.rotate();
    } catch (err) {
      this.opts.failed(stack, err);
    }
  }

  close(): void {
    this.started = false;
    this.journal.close();
  }

  /** Replaces the record with the sends of the last minute, atomically, and appends to it from there. */
  private rotate(): void {
    const lines: string[] = [];
    for (const [stack, times] of this.opts.current()) for (const at of times) lines.push(`${Math.round(at)}\t${stack}`);
    this.journal.replace(lines);
  }
}
