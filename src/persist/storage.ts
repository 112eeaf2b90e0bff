/**
 * --storage.path: the directory where the exporter keeps what it knew, so that a restart serves
 * every series at once and reads on where it stopped (docs/restarts.md). Opened once at start
 * (folder.ts: made, checked, locked), with every stack's state file and the request record
 * (send-record.ts) read; each stack then asks restore(stack) once: restored, cold (and why) or
 * foreign, with the sends of its last minute. A file cut short, corrupt or unreadable means a cold
 * start of its stack with one warning, never a crash. This folder knows no component: what each
 * part holds is src/stack-state.ts's business.
 */
import type { StackConfig } from '../config/types.js';
import { ConfigError } from '../errors.js';
import { checkDocument, REFRESH_AFTER_SECONDS, type StackDocument } from './document.js';
import { Folder, FolderError } from './folder.js';
import { describeHolder, REFRESH_MS, type LockHolder } from './lock.js';
import { readJournal, SendJournal, type JournalRead } from './send-record.js';
import { readStateFile, STACKS_DIR, stateFiles } from './state-file.js';
import { TokenKeeper } from './token-file.js';
import { StateWriter, type StateSource, type WriterOptions } from './writer.js';

/** The writer's options that are the storage's own: its folder, logger, instruments and clock (unix seconds). */
export type StorageOptions = Pick<WriterOptions, 'dir' | 'logger' | 'instruments' | 'now'>;

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

/**
 * What a stack starts from: its state, restored (`value`: what `read` made of it); a cold start and
 * why (no state kept, or it cannot be read or does not validate); or state that is not this stack's
 * as configured now (another account, stack or format). Each with what the stack sent in the
 * minute before the restart, when anything.
 */
export type Restore<T> = ({ readonly kind: 'restored'; readonly value: T; readonly state: RestoredState } | { readonly kind: 'cold' | 'foreign'; readonly reason: string }) & {
  readonly sends?: SendsRead;
};

type FileRead = { readonly value: unknown } | { readonly error: string };

export class Storage {
  private writer: StateWriter | undefined;
  private journal: SendJournal | undefined;
  /** The running stacks (from start()). */
  private source: StateSource | undefined;
  /** The lock names another process: nothing is written any more. */
  private lost = false;
  /** The lock's last refresh failed (logged once until one succeeds). */
  private lockFailing = false;
  /** Each stack's current token, for a backfill given this folder (token-file.ts). */
  private tokens: TokenKeeper | undefined;
  /** Stacks that had a state file at start. */
  private readonly onDisk: readonly string[];

  private constructor(
    private readonly opts: StorageOptions,
    private readonly folder: Folder,
    private readonly files: Map<string, FileRead>,
    private readonly sends: JournalRead,
  ) {
    this.onDisk = [...files.keys()];
  }

  /**
   * Makes, checks and locks the directory and reads what it holds. Throws ConfigError when it cannot
   * be made or written, FolderInUseError when another running process holds it.
   */
  static async open(opts: StorageOptions): Promise<Storage> {
    const { dir, logger } = opts;
    // The lock's events reach the storage once it is made (a refresh comes REFRESH_MS after the lock at the earliest).
    const made: { storage?: Storage } = {};
    const lock = {
      lost: (holder: LockHolder | undefined) => made.storage?.lockLost(holder),
      fault: (err: unknown) => made.storage?.lockFault(err),
      recovered: () => made.storage?.lockRecovered(),
    };
    let folder: Folder;
    try {
      folder = await Folder.open({ dir, command: 'daemon', flag: '--storage.path', logger, subfolders: [STACKS_DIR], ...lock });
    } catch (err) {
      if (!(err instanceof FolderError)) throw err;
      throw new ConfigError([{ path: 'storagePath', message: `${err.message} (--storage.path, EXPORTER_STORAGE_PATH)` }]);
    }
    const files = new Map<string, FileRead>();
    let sends: JournalRead;
    try {
      for (const [stack, path] of await stateFiles(dir)) {
        try {
          files.set(stack, { value: (await readStateFile(path)).value });
        } catch (err) {
          files.set(stack, { error: (err as Error).message });
        }
      }
      sends = readJournal(dir, opts.now() * 1000);
    } catch (err) {
      // Opened and failed: the folder is let go as it was found (no lock of this process left in it).
      folder.close();
      throw new ConfigError([{ path: 'storagePath', message: `${dir} (--storage.path, EXPORTER_STORAGE_PATH) cannot be read: ${(err as Error).message}` }]);
    }
    if (sends.kind === 'unreadable') {
      logger.warn({ storagePath: dir, reason: sends.reason }, 'the record of the requests sent before the restart cannot be read: each stack sends nothing for a minute, so that none goes over its rate');
    }
    made.storage = new Storage(opts, folder, files, sends);
    made.storage.tokens = new TokenKeeper(dir, logger);
    return made.storage;
  }

  /**
   * What `stack` starts from, asked once per stack: its state (made into what the stack needs by
   * `read`, which names the first part that does not validate), or why it starts cold or foreign;
   * with the sends of its last minute. Logged here: a foreign state with one info line, a state that
   * cannot be read or does not validate with one warning.
   */
  restore<T>(stack: StackConfig, read: (state: RestoredState) => T | { readonly invalid: string }): Restore<T> {
    const sends = this.sendsOf(stack.name);
    const withSends = sends === undefined ? {} : { sends };
    const file = this.files.get(stack.name);
    if (!file) return { kind: 'cold', reason: 'no state kept', ...withSends };
    this.files.delete(stack.name);
    const { logger, dir, now } = this.opts;
    const cold = (reason: string, message: string): Restore<T> => {
      logger.warn({ stack: stack.name, storagePath: dir, reason }, message);
      return { kind: 'cold', reason, ...withSends };
    };
    if ('error' in file) return cold(file.error, 'the state file of this stack cannot be read (cut short, corrupt or unreadable): it starts cold');
    const verdict = checkDocument(file.value, stack);
    if (!verdict.ok && verdict.corrupt) return cold(verdict.reason, 'the state file of this stack is not valid: it starts cold');
    if (!verdict.ok) {
      logger.info({ stack: stack.name, reason: verdict.reason }, 'state kept for this stack discarded: it does not belong to the stack as configured now');
      return { kind: 'foreign', reason: verdict.reason, ...withSends };
    }
    const ageSeconds = Math.max(0, now() - verdict.doc.writtenAt);
    const state: RestoredState = { doc: verdict.doc, ageSeconds, refresh: ageSeconds > REFRESH_AFTER_SECONDS };
    const value = read(state);
    if (isInvalid(value)) return cold(`part ${value.invalid} does not validate`, 'the state file of this stack is not valid: it starts cold');
    return { kind: 'restored', value, state, ...withSends };
  }

  /**
   * What the stack sent in the minute before the restart. Not known when the record could not be
   * read, or is missing while the stack had a state file (it was lost): then the budget assumes the
   * worst. A stack without either has sent nothing.
   */
  private sendsOf(stack: string): SendsRead | undefined {
    if (this.sends.kind === 'unreadable') return 'unknown';
    if (this.sends.kind === 'missing') return this.onDisk.includes(stack) ? 'unknown' : undefined;
    return this.sends.sends.get(stack);
  }

  /** Starts the request record and the writer once the stacks run (`current`: their budgets' send times). */
  start(source: StateSource, current: () => ReadonlyMap<string, readonly number[]>): void {
    const { dir, logger, instruments, now } = this.opts;
    // Files of stacks no longer configured are removed by the writer's first round.
    this.files.clear();
    this.source = source;
    const writer = new StateWriter({ dir, source, logger, instruments, now, files: this.onDisk });
    this.writer = writer;
    if (this.lost) writer.abandon();
    else {
      this.journal = new SendJournal({ dir, current, failed: (stack, err) => writer.failed(stack, err) });
      try {
        this.journal.start();
      } catch (err) {
        // Appended to from the next request on, once it can be (a failed append is the stack's write error).
        this.failedAll(err);
      }
    }
    writer.start();
  }

  /** A request of `stack` leaves at `atMs` (the road's send events, src/stacks.ts). */
  recordSend(stack: string, atMs: number): void {
    this.journal?.record(stack, atMs);
  }

  /** A token was just granted to `stack` (its client's onToken): kept for a backfill given this folder. */
  keepToken(stack: StackConfig, token: string): void {
    this.tokens?.keep(stack, token);
  }

  /** Writes `stack` now (the benchmark, tests). */
  writeNow(stack: string): ReturnType<StateWriter['writeNow']> {
    return this.writer?.writeNow(stack) ?? Promise.resolve(undefined);
  }

  /**
   * Shutdown: every stack that has polled is written (none once the lock names another process);
   * the record is closed, the lock released. A disk fault is logged and counted, never thrown.
   */
  async close(): Promise<void> {
    await this.writer?.close();
    this.closeJournal();
    this.tokens?.close();
    this.folder.close();
  }

  /** A start that failed: the folder is let go without a write (the state files stay as they were read), the lock removed. */
  release(): void {
    this.writer?.abandon();
    this.tokens?.abandon();
    this.closeJournal();
    this.folder.close();
  }

  private closeJournal(): void {
    try {
      this.journal?.close();
    } catch (err) {
      this.failedAll(err);
    }
    this.journal = undefined;
  }

  /** A fault of a file every stack's state has a part in (the request record): each stack's write error. */
  private failedAll(err: unknown): void {
    for (const stack of this.source?.stacks() ?? []) this.writer?.failed(stack.name, err);
  }

  /**
   * The lock names another process now: that one writes here, so this one stops writing (its
   * shutdown included). Polling and serving go on.
   */
  private lockLost(holder: LockHolder | undefined): void {
    this.lost = true;
    this.opts.logger.error(
      { storagePath: this.opts.dir, holder: describeHolder(holder) },
      'the lock of --storage.path was taken by another process: this exporter stops writing its state there, also at its shutdown (polling and serving go on); restart it once the folder is its own again',
    );
    this.writer?.abandon();
    this.tokens?.abandon();
    this.closeJournal();
  }

  /**
   * The lock's refresh failed (the folder went read-only, EIO, EACCES, ESTALE): counted as an error
   * of every stack's state (`cmdb_exporter_state_writes_total{result="error"}`: each stack's state
   * lives in the folder), logged once until a refresh succeeds again, tried again at the next one.
   * The lock is still this process's: its writes are tried again too.
   */
  private lockFault(err: unknown): void {
    for (const stack of this.source?.stacks() ?? []) this.opts.instruments.stateWrites.inc({ stack: stack.name, result: 'error' });
    if (this.lockFailing) return;
    this.lockFailing = true;
    this.opts.logger.error(
      { storagePath: this.opts.dir, err: err instanceof Error ? err.message : String(err) },
      `the lock of --storage.path cannot be refreshed (polling and serving go on; tried again every ${REFRESH_MS / 1000} s): check that the folder is writable`,
    );
  }

  private lockRecovered(): void {
    if (!this.lockFailing) return;
    this.lockFailing = false;
    this.opts.logger.info({ storagePath: this.opts.dir }, 'the lock of --storage.path is refreshed again');
  }
}

function isInvalid(x: unknown): x is { readonly invalid: string } {
  return typeof x === 'object' && x !== null && 'invalid' in x && typeof (x as { invalid: unknown }).invalid === 'string';
}
