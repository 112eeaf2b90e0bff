/**
 * --storage.path: the directory where the exporter keeps what it knew, so that a restart serves
 * every series at once and reads on where it stopped (docs/restarts.md). Opened once at start:
 * the directory is made (0700) and checked, every stack's state file is read, and the request
 * record (journal.ts) too. What belongs to a configured stack is handed out once (take); a file
 * cut short, corrupt or unreadable means a cold start of its stack with one warning, never a crash.
 *
 * Layering: this folder reads and writes files and knows the configuration, the logger and the
 * metrics; it knows no component. What each part holds is src/stack-state.ts's business.
 */
import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { StackConfig } from '../config/types.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { StateInstruments } from '../metrics/instruments.js';
import { checkDocument, REFRESH_AFTER_SECONDS, type StackDocument } from './document.js';
import { readJournal, SendJournal, type JournalRead } from './journal.js';
import { readStateFile, STACKS_DIR, stateFiles } from './state-file.js';
import { StateWriter, type StateSource } from './writer.js';

export interface StorageOptions {
  readonly dir: string;
  readonly logger: Logger;
  readonly instruments: StateInstruments;
  /** Unix seconds. */
  readonly now: () => number;
}

/** A stack's state as read at start, for src/stack-state.ts to restore. */
export interface RestoredState {
  readonly doc: StackDocument;
  /** Seconds since it was written. */
  readonly ageSeconds: number;
  /** Older than REFRESH_AFTER_SECONDS: served, but everything it knew is read again. */
  readonly refresh: boolean;
}

/** What the request record says of a stack's last minute: send times (ms), or not known (then assume the worst). */
export type SendsRead = readonly number[] | 'unknown';

type FileRead = { readonly value: unknown } | { readonly error: string };

export class Storage {
  private writer: StateWriter | undefined;
  private journal: SendJournal | undefined;

  private constructor(
    private readonly opts: StorageOptions,
    private readonly files: Map<string, FileRead>,
    private readonly sends: JournalRead,
  ) {
    this.onDisk = [...files.keys()];
  }

  /** Stacks that had a state file at start. */
  private readonly onDisk: readonly string[];

  /** Makes and checks the directory and reads what it holds. Throws ConfigError when it cannot be made or written. */
  static async open(opts: StorageOptions): Promise<Storage> {
    const { dir } = opts;
    try {
      await mkdir(join(dir, STACKS_DIR), { recursive: true, mode: 0o700 });
      await access(join(dir, STACKS_DIR), constants.R_OK | constants.W_OK | constants.X_OK);
    } catch (err) {
      throw new ConfigError([{ path: 'storagePath', message: `${dir} cannot be used to keep the exporter's state (--storage.path, EXPORTER_STORAGE_PATH): ${(err as Error).message}` }]);
    }
    const files = new Map<string, FileRead>();
    for (const [stack, path] of await stateFiles(dir)) {
      try {
        files.set(stack, { value: (await readStateFile(path)).value });
      } catch (err) {
        files.set(stack, { error: (err as Error).message });
      }
    }
    const sends = readJournal(dir, opts.now() * 1000);
    if (sends.kind === 'unreadable') {
      opts.logger.warn({ storagePath: dir, reason: sends.reason }, 'the record of the requests sent before the restart cannot be read: each stack sends nothing for a minute, so that none goes over its rate');
    }
    return new Storage(opts, files, sends);
  }

  /**
   * The state kept for `stack`, once: undefined when there is none, or when it does not belong to
   * the stack as configured now (one info line) or cannot be read (one warning; a cold start).
   */
  take(stack: StackConfig): RestoredState | undefined {
    const read = this.files.get(stack.name);
    if (!read) return undefined;
    this.files.delete(stack.name);
    const { logger, dir, now } = this.opts;
    if ('error' in read) {
      logger.warn({ stack: stack.name, storagePath: dir, reason: read.error }, 'the state file of this stack cannot be read (cut short, corrupt or unreadable): it starts cold');
      return undefined;
    }
    const verdict = checkDocument(read.value, stack);
    if (!verdict.ok) {
      if (verdict.corrupt) logger.warn({ stack: stack.name, storagePath: dir, reason: verdict.reason }, 'the state file of this stack is not valid: it starts cold');
      else logger.info({ stack: stack.name, reason: verdict.reason }, 'state kept for this stack discarded: it does not belong to the stack as configured now');
      return undefined;
    }
    const ageSeconds = Math.max(0, now() - verdict.doc.writtenAt);
    return { doc: verdict.doc, ageSeconds, refresh: ageSeconds > REFRESH_AFTER_SECONDS };
  }

  /** A restored stack's state turned out invalid in one of its parts: a cold start, one warning. */
  invalid(stack: string, part: string): void {
    this.opts.logger.warn({ stack, storagePath: this.opts.dir, part }, 'the state file of this stack is not valid: it starts cold');
  }

  /**
   * What the stack sent in the minute before the restart. Not known when the record could not be
   * read, or is missing while the stack had a state file (it was lost): then the budget assumes the
   * worst. A stack without either has sent nothing.
   */
  sendsOf(stack: string): SendsRead | undefined {
    if (this.sends.kind === 'unreadable') return 'unknown';
    if (this.sends.kind === 'missing') return this.onDisk.includes(stack) ? 'unknown' : undefined;
    return this.sends.sends.get(stack);
  }

  /** Starts the request record and the writer once the stacks run (`current`: their budgets' send times). */
  start(source: StateSource, current: () => ReadonlyMap<string, readonly number[]>): void {
    const { dir, logger, instruments, now } = this.opts;
    // Files of stacks no longer configured are removed by the writer's first round.
    this.files.clear();
    const writer = new StateWriter({ dir, source, logger, instruments, now, files: this.onDisk });
    this.writer = writer;
    this.journal = new SendJournal({ dir, current, failed: (stack, err) => writer.failed(stack, err) });
    try {
      this.journal.start();
    } catch (err) {
      writer.failed('*', err);
    }
    writer.start();
  }

  /** A request of `stack` leaves at `atMs` (the road's send events, src/stacks.ts). */
  recordSend(stack: string, atMs: number): void {
    this.journal?.record(stack, atMs);
  }

  /** Writes `stack` now (the benchmark, tests). */
  writeNow(stack: string): ReturnType<StateWriter['writeNow']> {
    return this.writer?.writeNow(stack) ?? Promise.resolve(undefined);
  }

  /** Shutdown: every stack that changed since its last write is written; the record is closed. */
  async close(): Promise<void> {
    await this.writer?.close();
    this.journal?.close();
  }
}
