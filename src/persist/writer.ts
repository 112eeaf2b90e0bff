/**
 * Writes each stack's state file (state-file.ts) off the scrape path, one file at a time, each in
 * slices (json-pieces.ts): a timer looks every TICK_MS at each stack's change marks and writes a
 * change of data at most every MIN_GAP_SECONDS, of times only every STATUS_GAP_SECONDS, an
 * endpoint's first outcome or series at the next look (docs/restarts.md, "How and when it is
 * written"). A failed write never stops a poll; once the folder's lock names another process
 * (abandon()), nothing is written any more.
 */
import { rm } from 'node:fs/promises';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import type { StateInstruments } from '../metrics/instruments.js';
import { serviceOf, STATE_FORMAT, STATE_VERSION, type StackDocument } from './document.js';
import { jsonPieces } from './json-pieces.js';
import { stateFileOf, writeStateFile } from './state-file.js';

export const TICK_MS = 1000;
/** Least time between two writes of one stack after a change of its series (seconds). */
export const MIN_GAP_SECONDS = 10;
/** Least time between two writes of one stack whose polls changed only times (seconds). */
export const STATUS_GAP_SECONDS = 300;

/** What the writer asks of the running stacks. */
export interface StateSource {
  /** The stacks configured now. */
  stacks(): readonly StackConfig[];
  /** The stack's change marks (SnapshotStore.changeMarks, and a connector scan's pages); `appeared` written at the next look. */
  marks(stack: string): { readonly data: number; readonly status: number; readonly appeared?: number } | undefined;
  /** Resolves once the series that arrived for the stack so far are served (a large poll or a restore is applied in slices). */
  settled(stack: string): Promise<void>;
  /** Resolves once parts() is current where a part is held off the main thread (a connector scan's pages). */
  prepare?(stack: string): Promise<void>;
  /** The stack's parts, each component's own state (src/stack-state.ts); undefined when it is not running. */
  parts(stack: string): Promise<Readonly<Record<string, unknown>> | undefined> | Readonly<Record<string, unknown>> | undefined;
}

export interface WriterOptions {
  readonly dir: string;
  readonly source: StateSource;
  readonly logger: Logger;
  readonly instruments: StateInstruments;
  /** Unix seconds. */
  readonly now: () => number;
  /** Stacks that have a state file already (read at start). */
  readonly files: Iterable<string>;
}

/** What one write cost (the benchmark reports it). */
export interface WriteFigures {
  readonly bytes: number;
  readonly seconds: number;
}

/** The marks a stack's file was last written at, and when (unix seconds). */
type Written = NonNullable<ReturnType<StateSource['marks']>> & { readonly at: number };

export class StateWriter {
  private readonly written = new Map<string, Written>();
  /** Stacks with a file on disk. */
  private readonly files: Set<string>;
  /** Stacks whose last write failed (logged once until one succeeds). */
  private readonly failing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private busy: Promise<void> | undefined;
  private closed = false;
  /** The folder's lock names another process: nothing is written any more. */
  private abandoned = false;

  constructor(private readonly opts: WriterOptions) {
    this.files = new Set(opts.files);
  }

  start(): void {
    this.timer = setInterval(() => void this.check(), TICK_MS);
    this.timer.unref();
  }

  /**
   * Stops the timer and writes every stack that has polled, changed or not: what only the cursors
   * and caches knew since the last write (a full scan that changed no series) is kept too.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.busy;
    if (this.abandoned) return;
    for (const stack of this.opts.source.stacks()) if (this.opts.source.marks(stack.name)) await this.write(stack);
  }

  /** Stops writing at once and for good, shutdown included (the folder's lock was lost: another process writes there now). */
  abandon(): void {
    this.closed = true;
    this.abandoned = true;
    clearInterval(this.timer);
  }

  /** Writes `stack` now, whatever its marks (the benchmark, tests). */
  async writeNow(name: string): Promise<WriteFigures | undefined> {
    while (this.busy) await this.busy;
    if (this.abandoned) return undefined;
    const stack = this.opts.source.stacks().find((s) => s.name === name);
    if (!stack) return undefined;
    const writing = this.write(stack);
    this.busy = writing.then(() => undefined).finally(() => (this.busy = undefined));
    return writing;
  }

  /** One look at every stack, writing those that are due (what the timer does every TICK_MS). */
  check(): Promise<void> {
    if (this.busy || this.closed) return this.busy ?? Promise.resolve();
    this.busy = this.round().finally(() => (this.busy = undefined));
    return this.busy;
  }

  private async round(): Promise<void> {
    const stacks = this.opts.source.stacks();
    await this.removeGone(new Set(stacks.map((s) => s.name)));
    for (const stack of stacks) {
      if (this.closed) return;
      if (this.due(stack.name)) await this.write(stack);
    }
  }

  private due(stack: string): boolean {
    const marks = this.opts.source.marks(stack);
    if (!marks) return false;
    const last = this.written.get(stack);
    if (!last) return true;
    if (marks.appeared !== undefined && marks.appeared !== last.appeared) return true;
    const age = this.opts.now() - last.at;
    if (marks.data !== last.data) return age >= MIN_GAP_SECONDS;
    return marks.status !== last.status && age >= STATUS_GAP_SECONDS;
  }

  private async write(stack: StackConfig): Promise<WriteFigures | undefined> {
    const { source, dir, now, instruments, logger } = this.opts;
    // What is written is what is served, complete: never an endpoint whose series are still being applied.
    await source.settled(stack.name);
    await source.prepare?.(stack.name);
    const marks = source.marks(stack.name) ?? { data: 0, status: 0 };
    const parts = await source.parts(stack.name);
    if (!parts || this.abandoned) return undefined;
    const at = now();
    const doc: StackDocument = { format: STATE_FORMAT, version: STATE_VERSION, stack: stack.name, service: serviceOf(stack), writtenAt: at, parts };
    const labels = { stack: stack.name };
    const started = performance.now();
    try {
      const bytes = await writeStateFile(stateFileOf(dir, stack.name), jsonPieces(doc));
      const seconds = (performance.now() - started) / 1000;
      this.written.set(stack.name, { ...marks, at });
      this.files.add(stack.name);
      instruments.stateWrites.inc({ ...labels, result: 'success' });
      instruments.stateBytes.set(labels, bytes);
      instruments.stateLastWrite.set(labels, at);
      if (this.failing.delete(stack.name)) logger.info(labels, 'the state of this stack is written again');
      return { bytes, seconds };
    } catch (err) {
      this.failed(stack.name, err);
      // Tried again after the least gap, not at every tick (what appeared is in the next try).
      this.written.set(stack.name, { data: -1, status: -1, ...(marks.appeared === undefined ? {} : { appeared: marks.appeared }), at });
      return undefined;
    }
  }

  /** A write of the stack's state (its file or its request record) failed: counted, logged once until one succeeds. */
  failed(stack: string, err: unknown): void {
    this.opts.instruments.stateWrites.inc({ stack, result: 'error' });
    if (this.failing.has(stack)) return;
    this.failing.add(stack);
    this.opts.logger.error(
      { stack, err: err instanceof Error ? err.message : String(err), storagePath: this.opts.dir },
      'could not write the state of this stack (polling goes on; a restart will start colder): check that --storage.path is writable and its disk not full',
    );
  }

  private async removeGone(configured: ReadonlySet<string>): Promise<void> {
    for (const stack of [...this.files]) {
      if (configured.has(stack)) continue;
      this.files.delete(stack);
      this.written.delete(stack);
      await rm(stateFileOf(this.opts.dir, stack), { force: true }).catch((err: unknown) => this.failed(stack, err));
      this.opts.logger.info({ stack }, 'state of a stack that is no longer configured discarded');
    }
  }
}
