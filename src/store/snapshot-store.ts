/**
 * The newest sample set per (stack, endpoint), swapped whole in one step, with the freshness rules
 * of docs/design.md (a successful poll replaces the series wholesale; a failed one sets
 * cmdb_endpoint_up 0 and keeps the last good series until the stale limit, dropped on a timer set
 * for that moment; before its first poll `snapshot().up` stays undefined, for readiness).
 *
 * A poll's series are prepared in slices (src/store/series.ts), one per turn of the event loop, and
 * swapped in when complete, in the order they arrived (update-queue.ts); readers see the old set
 * until then, never a mix. succeed(), confirm() and fail() resolve once applied.
 */
import type { DataEndpoint } from '../api/endpoints.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Sample } from '../metrics/sample.js';
import type { Logger } from '../logger.js';
import { JsonList } from '../json-list.js';
import { deduplicate } from './prepare.js';
import { NO_LINES, SLICE, type SeriesLines, type SeriesRenderer } from './series.js';
import { sampleToJson, STORE_STATE_VERSION, type StoredEndpoint, type StoreState } from './store-state.js';
import { UpdateQueue, type Update } from './update-queue.js';

export interface EndpointSettings {
  readonly intervalSeconds: number;
  readonly staleAfterSeconds: number;
}

export interface EndpointSnapshot {
  /** As the collector made them: without the `stack` label, which the exposition adds. */
  readonly samples: readonly Sample[];
  /** Undefined until the first poll finished. */
  readonly up?: 0 | 1;
  /** 1 while the newest poll was refused with 403. */
  readonly forbidden?: 0 | 1;
  readonly lastSuccess?: number;
  /** Served from the state an earlier process kept (--storage.path) until the endpoint's first successful poll. */
  readonly restored?: true;
}

/** An endpoint as the store holds it: its snapshot, its settings, and its series as the renderer made them. */
export interface HeldEndpoint extends EndpointSnapshot {
  readonly settings: EndpointSettings;
  /** Rendered when the samples were swapped in; the same object while the rendered bytes are the same. */
  readonly lines: SeriesLines;
}

interface StackState {
  /** A new map each time the stack is added: the exposition renders a re-added stack again. */
  readonly endpoints: Map<DataEndpoint, HeldEndpoint>;
  readonly maxSeries: number;
  readonly capped: Set<DataEndpoint>;
}

/**
 * Change counts: `data` moves with a change of series, up or forbidden, `status` with any change,
 * `appeared` when an endpoint that held nothing gets its first outcome or series (a first poll,
 * series back after they expired): what a state file written before lacks entirely.
 */
export interface ChangeMarks {
  readonly data: number;
  readonly status: number;
  readonly appeared?: number;
}

export interface SnapshotStoreOptions {
  readonly instruments: Instruments;
  readonly logger: Logger;
  /**
   * Unix seconds: with it, the series of failing endpoints expire on a timer at their stale limit,
   * scraped or not; without it (unit tests) only when expireStale() is called.
   */
  readonly now?: () => number;
  /** Renders each endpoint's series as they are swapped in (the exposition, src/exposition/); without it none are rendered. */
  readonly renderer?: SeriesRenderer;
}

export class SnapshotStore {
  private readonly stacks = new Map<string, StackState>();
  private readonly queue = new UpdateQueue();
  /** Set for the earliest stale limit (scheduleExpiry), at `expiryAt` (unix seconds; Infinity: none). */
  private expiryTimer: NodeJS.Timeout | undefined;
  private expiryAt = Infinity;
  /** Per stack, the change count at its last change of series, up or forbidden (data), and of anything (status). */
  private readonly marks = new Map<string, ChangeMarks>();
  private changes = 0;
  private whole: ChangeMarks = { data: 0, status: 0 };
  /** Told of every change applied to an endpoint's snapshot (a poll's outcome, expired series). */
  private readonly appliedListeners = new Set<(stack: string, endpoint: DataEndpoint) => void>();
  /** Told of every change of what the store holds (see version()). */
  private readonly changeListeners = new Set<() => void>();

  constructor(private readonly opts: SnapshotStoreOptions) {}

  /**
   * Adds `stack`, or re-adds it after a restart with a changed configuration: then each endpoint
   * still enabled keeps what it holds (series, up, last success) under its new settings until the new
   * runtime's first poll replaces it, so a reload neither drops the data nor makes /readyz wait.
   */
  addStack(stack: string, endpoints: ReadonlyMap<DataEndpoint, EndpointSettings>, maxSeries: number): void {
    this.queue.flush();
    const previous = this.stacks.get(stack);
    const state: StackState = { endpoints: new Map(), maxSeries, capped: new Set() };
    for (const [endpoint, settings] of endpoints) {
      const held = previous?.endpoints.get(endpoint);
      state.endpoints.set(endpoint, held ? { ...held, settings } : { settings, samples: [], lines: NO_LINES });
    }
    this.stacks.set(stack, state);
    this.changed(true);
  }

  removeStack(stack: string): void {
    this.queue.flush();
    this.marks.delete(stack);
    if (this.stacks.delete(stack)) this.changed(true);
    this.scheduleExpiry();
  }

  /** The applied snapshot: a large update still being prepared is not in it yet (see settled()). */
  snapshot(stack: string, endpoint: DataEndpoint): EndpointSnapshot | undefined {
    return this.stacks.get(stack)?.endpoints.get(endpoint);
  }

  /** The endpoints of `stack` as held now; a new map after the stack was added again. */
  endpoints(stack: string): ReadonlyMap<DataEndpoint, HeldEndpoint> | undefined {
    return this.stacks.get(stack)?.endpoints;
  }

  /** The stacks held, sorted (the order of the exposition). */
  stackNames(): string[] {
    return [...this.stacks.keys()].sort();
  }

  hasStack(stack: string): boolean {
    return this.stacks.has(stack);
  }

  seriesCount(stack: string): number {
    let n = 0;
    for (const s of this.stacks.get(stack)?.endpoints.values() ?? []) n += s.samples.length;
    return n;
  }

  /** `listener` is called after each change of an endpoint's snapshot is applied; returns the unsubscribe. */
  onApplied(listener: (stack: string, endpoint: DataEndpoint) => void): () => void {
    this.appliedListeners.add(listener);
    return () => this.appliedListeners.delete(listener);
  }

  /** `listener` is called after every change of what the store holds (version() moved); returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Change counts of the whole store: stacks added or removed count as data changes. */
  version(): ChangeMarks {
    return this.whole;
  }

  /** Change counts of `stack` (see marks): a writer of its state compares them with those it last wrote. */
  changeMarks(stack: string): ChangeMarks | undefined {
    return this.marks.get(stack);
  }

  /** Resolves once every update that arrived so far has been applied. */
  settled(): Promise<void> {
    return this.queue.settled();
  }

  /** Resolves once every update of `stack` that arrived so far has been applied (not waiting for other stacks'). */
  settledOf(stack: string): Promise<void> {
    return this.queue.settledOf(stack);
  }

  /** A successful poll: `samples` replace the endpoint's series wholesale. Resolves once applied. */
  succeed(stack: string, endpoint: DataEndpoint, samples: readonly Sample[], at: number): Promise<void> {
    return this.enqueue(stack, this.swapIn(stack, endpoint, samples, { up: 1, forbidden: 0, lastSuccess: at, restored: undefined }), samples.length);
  }

  /** A successful poll that needed no request: the series already held are still current. */
  confirm(stack: string, endpoint: DataEndpoint, at: number): Promise<void> {
    return this.enqueue(stack, this.swapIn(stack, endpoint, undefined, { up: 1, forbidden: 0, lastSuccess: at, restored: undefined }), 0);
  }

  /**
   * A failed poll: up 0 at once. `partial`, when given, replaces the series (a poll of several ids
   * where some failed: fresh results merged with the last good ones of the failed ids).
   */
  fail(stack: string, endpoint: DataEndpoint, partial?: readonly Sample[], forbidden = false): Promise<void> {
    return this.enqueue(stack, this.swapIn(stack, endpoint, partial, { up: 0, forbidden: forbidden ? 1 : 0 }), partial?.length ?? 0);
  }

  /**
   * What a restart keeps of `stack` (--storage.path): each endpoint's series, up, forbidden and last
   * success as served now (an update still being prepared is not in it). The sample arrays are the
   * store's own: they are replaced whole, never changed, so they stay as they were while written;
   * each sample is encoded as it is written (JsonList, sampleToJson).
   */
  exportStack(stack: string): StoreState | undefined {
    const state = this.stacks.get(stack);
    if (!state) return undefined;
    const endpoints = [...state.endpoints].map(([endpoint, s]): StoreState['endpoints'][number] => {
      const { up, forbidden, lastSuccess, samples } = s;
      return { endpoint, samples: new JsonList(samples, sampleToJson), ...(up === undefined ? {} : { up }), ...(forbidden === undefined ? {} : { forbidden }), ...(lastSuccess === undefined ? {} : { lastSuccess }) };
    });
    return { v: STORE_STATE_VERSION, endpoints };
  }

  /**
   * Serves what an earlier process kept (storeStateFrom) for the endpoints `stack` has now: its
   * series under their original last-success times, up and forbidden as its newest poll left them,
   * marked restored until a poll succeeds. Through the same preparation as a poll's series
   * (duplicates, the series cap), in slices; resolves once every endpoint's is applied.
   */
  restoreStack(stack: string, endpoints: readonly StoredEndpoint[]): Promise<void> {
    const applied: Array<Promise<void>> = [];
    for (const e of endpoints) {
      if (!this.stacks.get(stack)?.endpoints.has(e.endpoint)) continue;
      const status = { up: e.up, forbidden: e.forbidden, lastSuccess: e.lastSuccess, restored: true as const };
      applied.push(this.enqueue(stack, this.swapIn(stack, e.endpoint, e.samples, status), e.samples.length));
    }
    return Promise.all(applied).then(() => undefined);
  }

  /** Per endpoint still served from restored state: how old its series are (now − last success). */
  restoredAges(now: number): Array<{ stack: string; endpoint: DataEndpoint; ageSeconds: number }> {
    const out: Array<{ stack: string; endpoint: DataEndpoint; ageSeconds: number }> = [];
    for (const [stack, state] of this.stacks) {
      for (const [endpoint, s] of state.endpoints) if (s.restored && s.lastSuccess !== undefined) out.push({ stack, endpoint, ageSeconds: now - s.lastSuccess });
    }
    return out;
  }

  /** Drop the series of failing endpoints whose last success is older than their stale limit. */
  expireStale(now: number): void {
    this.queue.flush();
    for (const [stack, state] of this.stacks) {
      for (const [endpoint, s] of state.endpoints) {
        if (s.up !== 0 || s.samples.length === 0 || now - (s.lastSuccess ?? -Infinity) <= s.settings.staleAfterSeconds) continue;
        state.endpoints.set(endpoint, { ...s, samples: [], lines: NO_LINES, restored: undefined });
        this.marked(stack, true);
        this.opts.logger.info(
          { stack, endpoint, staleAfterSeconds: s.settings.staleAfterSeconds },
          'dropped the series of a failing endpoint: its last success is older than the stale limit',
        );
      }
    }
    this.scheduleExpiry();
  }

  /** Stops the expiry timer (the process is shutting down). */
  close(): void {
    clearTimeout(this.expiryTimer);
    this.expiryAt = Infinity;
  }

  /** Small updates apply at once when nothing waits before them; the rest in slices, in order. */
  private enqueue(stack: string, update: Update, samples: number): Promise<void> {
    return this.queue.enqueue(stack, update, samples <= SLICE);
  }

  /** Prepares `samples` (when given) in slices, then swaps them in with `status` in one step. */
  private *swapIn(stack: string, endpoint: DataEndpoint, samples: readonly Sample[] | undefined, status: Partial<EndpointSnapshot>): Update {
    const prepared = samples ? yield* this.prepare(stack, endpoint, samples) : undefined;
    const state = this.stacks.get(stack);
    const current = state?.endpoints.get(endpoint);
    if (!state || !current) return; // stack removed or endpoint disabled while the poll ran
    const next: HeldEndpoint = { ...current, ...(prepared ? { samples: prepared.samples, lines: prepared.lines } : {}), ...status };
    state.endpoints.set(endpoint, next);
    const appeared = (current.up === undefined && next.up !== undefined) || (current.samples.length === 0 && next.samples.length > 0);
    this.marked(stack, (prepared?.changed ?? false) || next.up !== current.up || next.forbidden !== current.forbidden, appeared);
    if (next.up !== current.up || next.lastSuccess !== current.lastSuccess || next.samples !== current.samples) this.scheduleExpiry();
    for (const listener of this.appliedListeners) listener(stack, endpoint);
  }

  /**
   * Drops duplicate label sets (first wins), applies the stack's series cap, and renders the lines
   * (the label text of each series formatted once, for both). The samples kept are the collector's
   * own objects (see Labelled). When the lines come out byte for byte as before, the old ones are
   * kept, so nothing served is re-made.
   */
  private *prepare(stack: string, endpoint: DataEndpoint, samples: readonly Sample[]): Generator<void, { samples: readonly Sample[]; lines: SeriesLines; changed: boolean }> {
    const { kept, texts, duplicates } = yield* deduplicate(stack, samples);
    if (duplicates > 0) {
      this.opts.instruments.duplicateSeries.inc({ stack }, duplicates);
      this.opts.logger.debug({ stack, endpoint, duplicates }, 'merged duplicate series (first kept)');
    }
    const capped = this.cap(stack, endpoint, kept);
    yield;
    const { renderer } = this.opts;
    if (!renderer) return { samples: capped, lines: NO_LINES, changed: true };
    const lines = yield* renderer.lines({ samples: capped, texts: capped === kept ? texts : texts.slice(0, capped.length) });
    const old = this.stacks.get(stack)?.endpoints.get(endpoint)?.lines;
    const same = old !== undefined && renderer.same(old, lines);
    return { samples: capped, lines: same ? old : lines, changed: !same };
  }

  private cap<T>(stack: string, endpoint: DataEndpoint, samples: T[]): T[] {
    const state = this.stacks.get(stack);
    if (!state) return samples;
    const others = this.seriesCount(stack) - (state.endpoints.get(endpoint)?.samples.length ?? 0);
    const room = Math.max(0, state.maxSeries - others);
    if (samples.length <= room) {
      state.capped.delete(endpoint);
      return samples;
    }
    const dropped = samples.length - room;
    this.opts.instruments.seriesDropped.inc({ stack }, dropped);
    if (!state.capped.has(endpoint)) {
      state.capped.add(endpoint);
      this.opts.logger.warn(
        { stack, endpoint, dropped, maxSeries: state.maxSeries },
        'series cap reached: dropped series of this endpoint; raise maxSeries if the CMDB really is this large',
      );
    }
    return samples.slice(0, room);
  }

  private marked(stack: string, data: boolean, appeared = false): void {
    const n = ++this.changes;
    const before = this.marks.get(stack);
    const since = appeared ? n : before?.appeared;
    this.marks.set(stack, { data: data ? n : (before?.data ?? n), status: n, ...(since === undefined ? {} : { appeared: since }) });
    this.changed(data, n);
  }

  /** What the store holds changed: the whole store's counts move, and the listeners are told. */
  private changed(data: boolean, n = ++this.changes): void {
    this.whole = { data: data ? n : this.whole.data, status: n };
    for (const listener of this.changeListeners) listener();
  }

  /**
   * Sets the timer for the earliest stale limit among failing endpoints that still hold series.
   * Called after every change, so the series go at their limit whether anyone scrapes or not.
   */
  private scheduleExpiry(): void {
    let next = Infinity;
    for (const state of this.stacks.values()) {
      for (const s of state.endpoints.values()) {
        if (s.up === 0 && s.samples.length > 0) next = Math.min(next, (s.lastSuccess ?? -Infinity) + s.settings.staleAfterSeconds);
      }
    }
    const { now } = this.opts;
    if (!now || next === this.expiryAt) return;
    this.close();
    this.expiryAt = next;
    if (next === Infinity) return;
    // Just past the limit: a series is stale once its age is above it, not at it.
    const delayMs = Math.min(Math.max(0, (next - now()) * 1000) + 10, 2 ** 31 - 1);
    this.expiryTimer = setTimeout(() => {
      this.expiryAt = Infinity;
      this.expireStale(now());
    }, delayMs);
    this.expiryTimer.unref();
  }
}
