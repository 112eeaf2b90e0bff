/**
 * The newest sample set per (stack, endpoint), swapped whole in one step, with the freshness rules
 * of metrics.md:
 * - a successful poll replaces the endpoint's series wholesale (vanished entities vanish at once);
 * - a failed poll sets cmdb_endpoint_up to 0 at once and keeps the last good series until the last
 *   success is older than the endpoint's stale limit, then drops them (on a timer set for that
 *   moment, not when someone scrapes: the log line and the series count say so on time);
 * - before its first poll has finished an endpoint reads cmdb_endpoint_up 0 (snapshot().up stays
 *   undefined: readiness tells "not polled yet" from "failed").
 * Rendering follows the data: an endpoint's series lines are rendered and UTF-8 encoded once, when
 * its poll swaps them in (each label set formatted once, for de-duplication and output alike), and
 * the exposition is assembled from those pieces once per change, as segments of bytes: runs of data
 * families (re-assembled only when some endpoint's series changed), runs of status families (up,
 * last success, series counts: every poll changes them), and the place of
 * cmdb_license_days_until_expiry, the one family computed at scrape time.
 *
 * A large poll is prepared in slices (lines.ts SLICE), one per turn of the event loop, and swapped in
 * when it is complete; updates apply in the order they arrived. Until then snapshot() shows the old
 * set, and settled() says when every update has been applied; text() and segments() apply pending
 * updates at once, so a caller never sees a mix of old and new series of one endpoint.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DATA_ENDPOINTS, type DataEndpoint } from '../api/endpoints.js';
import { CATALOGUE, family } from '../metrics/catalogue.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Sample } from '../metrics/sample.js';
import type { Logger } from '../logger.js';
import { daysUntilExpiry } from '../time.js';
import { formatLabels, renderFamily, type Series } from './exposition.js';
import { header, joinSmall, renderLines, sameLines, sortedByLabels, SLICE, type FamilyLines } from './lines.js';
import { JsonList } from '../json-list.js';
import { sampleToJson, STORE_STATE_VERSION, type StoredEndpoint, type StoreState } from './store-state.js';

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

interface EndpointState extends EndpointSnapshot {
  readonly settings: EndpointSettings;
  /** The samples' exposition lines per family, sorted, UTF-8, in pieces; rendered when the samples were swapped in. */
  readonly lines: FamilyLines;
}

const NO_LINES: FamilyLines = new Map();

interface StackState {
  readonly endpoints: Map<DataEndpoint, EndpointState>;
  readonly maxSeries: number;
  readonly capped: Set<DataEndpoint>;
  /** This stack's own exposition (GET /metrics?stack=NAME), assembled once per change of the stack. */
  readonly view: StackView;
}

interface StackView {
  /** The stack's segments; null when a change of the stack has not been rendered yet. */
  rendered: Segment[] | null;
  /** Its data runs, kept across status-only changes; null after a data change. */
  dataRuns: Buffer[][] | null;
}

/**
 * What a scrape response is made from (src/store/scrape-response.ts): the whole store, or the view
 * of one stack (SnapshotStore.view).
 */
export interface ExpositionSource {
  settled(): Promise<void>;
  segments(): readonly Segment[];
  daysText(now: number): string;
}

/**
 * A run of families of one kind, in catalogue order, as the pieces of bytes it is written from;
 * `days` holds none (computed per scrape). A data run is not copied into one Buffer: its pieces are
 * the endpoints' own pieces of family lines (lines.ts renderLines; small ones joined, joinSmall), so
 * a change costs no copy of the whole exposition, and a piece whose endpoint did not change is the
 * same Buffer (and keeps its gzip).
 */
export interface Segment {
  readonly kind: 'data' | 'status' | 'days';
  readonly parts: readonly Buffer[];
}

const DAYS = 'cmdb_license_days_until_expiry';
const EXPIRY = 'cmdb_license_expiry_timestamp_seconds';
/** Families made from the endpoints' states rather than their samples: every poll changes them. */
const STATUS_FAMILIES = new Set([
  'cmdb_endpoint_poll_interval_seconds',
  'cmdb_endpoint_up',
  'cmdb_endpoint_forbidden',
  'cmdb_endpoint_last_success_timestamp_seconds',
  'cmdb_series',
]);
const EMPTY = Buffer.alloc(0);
const NO_SEGMENTS: readonly Segment[] = [];

function runsOfFamilies() {
  const runs: Array<{ kind: Segment['kind']; names: string[] }> = [];
  for (const f of CATALOGUE) {
    if (f.origin !== 'snapshot') continue;
    const kind = f.name === DAYS ? 'days' : STATUS_FAMILIES.has(f.name) ? 'status' : 'data';
    const last = runs[runs.length - 1];
    if (last && last.kind === kind && kind !== 'days') last.names.push(f.name);
    else runs.push({ kind, names: [f.name] });
  }
  return runs;
}
const RUNS = runsOfFamilies();
const HEADERS = new Map(CATALOGUE.map((f) => [f.name, Buffer.from(header(f), 'utf8')]));

/** An update waiting for its turn: a generator that yields between slices of its work. */
type Update = Generator<void, void>;

export class SnapshotStore {
  private readonly stacks = new Map<string, StackState>();
  /** The assembled segments; null when a change has not been rendered yet. */
  private rendered: Segment[] | null = null;
  /** The data runs' pieces, kept across status-only changes; null after a data change. */
  private dataRuns: Buffer[][] | null = null;
  private renderScheduled = false;
  /** Updates not yet applied, in arrival order; the first one may be half done. */
  private readonly queue: Update[] = [];
  /** Updates in the queue per stack (see settledOf). */
  private readonly pendingOf = new Map<string, number>();
  private draining: Promise<void> | null = null;

  /** Per stack, the change count at its last change of series, up or forbidden (data), and of anything (status). */
  private readonly marks = new Map<string, { data: number; status: number }>();
  private changes = 0;
  /** Told of every change applied to an endpoint's snapshot (a poll's outcome, expired series). */
  private readonly appliedListeners = new Set<(stack: string, endpoint: DataEndpoint) => void>();

  private expiryTimer: NodeJS.Timeout | undefined;
  /** The stale limit the expiry timer is set for (unix seconds); Infinity when none is set. */
  private expiryAt = Infinity;

  /**
   * `now` (unix seconds): with it, the series of failing endpoints expire on a timer at their stale
   * limit, scraped or not; without it (unit tests) only when expireStale() is called.
   */
  constructor(private readonly opts: { instruments: Instruments; logger: Logger; now?: () => number }) {}

  /**
   * Adds `stack`, or re-adds it after a restart with a changed configuration: then each endpoint
   * still enabled keeps what it holds (series, up, last success) under its new settings until the new
   * runtime's first poll replaces it, so a reload neither drops the data nor makes /readyz wait.
   */
  addStack(stack: string, endpoints: ReadonlyMap<DataEndpoint, EndpointSettings>, maxSeries: number): void {
    this.flush();
    const previous = this.stacks.get(stack);
    const state: StackState = { endpoints: new Map(), maxSeries, capped: new Set(), view: { rendered: null, dataRuns: null } };
    for (const [endpoint, settings] of endpoints) {
      const held = previous?.endpoints.get(endpoint);
      state.endpoints.set(endpoint, held ? { ...held, settings } : { settings, samples: [], lines: NO_LINES });
    }
    this.stacks.set(stack, state);
    this.invalidate(true);
  }

  removeStack(stack: string): void {
    this.flush();
    this.marks.delete(stack);
    if (this.stacks.delete(stack)) this.invalidate(true);
    this.scheduleExpiry();
  }

  /** The applied snapshot: a large update still being prepared is not in it yet (see settled()). */
  snapshot(stack: string, endpoint: DataEndpoint): EndpointSnapshot | undefined {
    return this.stacks.get(stack)?.endpoints.get(endpoint);
  }

  /** `listener` is called after each change of an endpoint's snapshot is applied; returns the unsubscribe. */
  onApplied(listener: (stack: string, endpoint: DataEndpoint) => void): () => void {
    this.appliedListeners.add(listener);
    return () => this.appliedListeners.delete(listener);
  }

  /** Resolves once every update that arrived so far has been applied. */
  settled(): Promise<void> {
    return this.draining ?? Promise.resolve();
  }

  /** A successful poll: `samples` replace the endpoint's series wholesale. */
  succeed(stack: string, endpoint: DataEndpoint, samples: readonly Sample[], at: number): void {
    this.enqueue(stack, this.swapIn(stack, endpoint, samples, { up: 1, forbidden: 0, lastSuccess: at, restored: undefined }), samples.length <= SLICE);
  }

  /** A successful poll that needed no request: the series already held are still current. */
  confirm(stack: string, endpoint: DataEndpoint, at: number): void {
    this.enqueue(stack, this.swapIn(stack, endpoint, undefined, { up: 1, forbidden: 0, lastSuccess: at, restored: undefined }), true);
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
   * (duplicates, the series cap), in slices.
   */
  restoreStack(stack: string, endpoints: readonly StoredEndpoint[]): void {
    for (const e of endpoints) {
      if (!this.stacks.get(stack)?.endpoints.has(e.endpoint)) continue;
      const status = { up: e.up, forbidden: e.forbidden, lastSuccess: e.lastSuccess, restored: true as const };
      this.enqueue(stack, this.swapIn(stack, e.endpoint, e.samples, status), e.samples.length <= SLICE);
    }
  }

  /** Per endpoint still served from restored state: how old its series are (now − last success). */
  restoredAges(now: number): Array<{ stack: string; endpoint: DataEndpoint; ageSeconds: number }> {
    const out: Array<{ stack: string; endpoint: DataEndpoint; ageSeconds: number }> = [];
    for (const [stack, state] of this.stacks) {
      for (const [endpoint, s] of state.endpoints) if (s.restored && s.lastSuccess !== undefined) out.push({ stack, endpoint, ageSeconds: now - s.lastSuccess });
    }
    return out;
  }

  /** Change counts of `stack` (see marks): a writer of its state compares them with those it last wrote. */
  changeMarks(stack: string): { readonly data: number; readonly status: number } | undefined {
    return this.marks.get(stack);
  }

  private marked(stack: string, data: boolean): void {
    const n = ++this.changes;
    this.marks.set(stack, { data: data ? n : (this.marks.get(stack)?.data ?? n), status: n });
  }

  /**
   * A failed poll: up 0 at once. `partial`, when given, replaces the series (a poll of several ids
   * where some failed: fresh results merged with the last good ones of the failed ids).
   */
  fail(stack: string, endpoint: DataEndpoint, partial?: readonly Sample[], forbidden = false): void {
    this.enqueue(stack, this.swapIn(stack, endpoint, partial, { up: 0, forbidden: forbidden ? 1 : 0 }), (partial?.length ?? 0) <= SLICE);
  }

  /** Prepares `samples` (when given) in slices, then swaps them in with `status` in one step. */
  private *swapIn(stack: string, endpoint: DataEndpoint, samples: readonly Sample[] | undefined, status: Partial<EndpointSnapshot>): Update {
    const prepared = samples ? yield* this.prepare(stack, endpoint, samples) : {};
    this.set(stack, endpoint, (s) => ({ ...s, ...prepared, ...status }));
  }

  /** Drop the series of failing endpoints whose last success is older than their stale limit. */
  expireStale(now: number): void {
    this.expireAt(now);
    this.scheduleExpiry();
  }

  /** Stops the expiry timer (the process is shutting down). */
  close(): void {
    clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    this.expiryAt = Infinity;
  }

  /**
   * Sets the timer for the earliest stale limit among failing endpoints that still hold series.
   * Called after every change, so the series go at their limit whether anyone scrapes or not.
   */
  private scheduleExpiry(): void {
    const now = this.opts.now;
    if (!now) return;
    let next = Infinity;
    for (const state of this.stacks.values()) {
      for (const s of state.endpoints.values()) {
        if (s.up === 0 && s.samples.length > 0) next = Math.min(next, (s.lastSuccess ?? -Infinity) + s.settings.staleAfterSeconds);
      }
    }
    if (next === this.expiryAt) return;
    clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    this.expiryAt = next;
    if (next === Infinity) return;
    // Just past the limit: a series is stale once its age is above it, not at it.
    const delayMs = Math.min(Math.max(0, (next - now()) * 1000) + 10, 2 ** 31 - 1);
    this.expiryTimer = setTimeout(() => {
      this.expiryTimer = undefined;
      this.expiryAt = Infinity;
      this.expireStale(now());
    }, delayMs);
    this.expiryTimer.unref();
  }

  private expireAt(now: number): void {
    this.flush();
    for (const stack of this.stacks.keys()) this.expireStaleOf(stack, now);
  }

  private expireStaleOf(stack: string, now: number): void {
    const state = this.stacks.get(stack);
    if (!state) return;
    for (const [endpoint, s] of state.endpoints) {
      if (s.up !== 0 || s.samples.length === 0) continue;
      const age = now - (s.lastSuccess ?? -Infinity);
      if (age > s.settings.staleAfterSeconds) {
        state.endpoints.set(endpoint, { ...s, samples: [], lines: NO_LINES, restored: undefined });
        this.marked(stack, true);
        state.view.rendered = state.view.dataRuns = null;
        this.invalidate(true);
        this.opts.logger.info(
          { stack, endpoint, staleAfterSeconds: s.settings.staleAfterSeconds },
          'dropped the series of a failing endpoint: its last success is older than the stale limit',
        );
      }
    }
  }

  seriesCount(stack: string): number {
    let n = 0;
    for (const s of this.stacks.get(stack)?.endpoints.values() ?? []) n += s.samples.length;
    return n;
  }

  /**
   * The exposition of every snapshot family, as segments in catalogue order; the `days` segment is
   * empty: fill it with daysText(now). The same Buffer objects come back until their part changes
   * (callers may cache per Buffer, e.g. its gzip). A scrape changes nothing: stale series expire on
   * the store's timer.
   */
  segments(): readonly Segment[] {
    this.flush();
    return (this.rendered ??= this.render());
  }

  /** The stacks held, sorted (the order of the exposition). */
  stackNames(): string[] {
    return [...this.stacks.keys()].sort();
  }

  hasStack(stack: string): boolean {
    return this.stacks.has(stack);
  }

  /**
   * One stack's part of the exposition: the same families and lines as in segments(), only this
   * stack's series, assembled once per change of the stack (a poll of another stack leaves it as it
   * is). Its pieces are the endpoints' own Buffers, shared with the whole exposition (and their gzip
   * with it, see scrape-response.ts). A stack no longer held has an empty exposition.
   */
  view(stack: string): ExpositionSource {
    return {
      settled: () => this.settledOf(stack),
      segments: () => this.stackSegments(stack),
      daysText: (now) => this.daysText(now, stack),
    };
  }

  private stackSegments(stack: string): readonly Segment[] {
    // Only when this stack has pending updates are they applied: a stack's scrape does no work for
    // the others. Like a scrape of the whole store it changes nothing: stale series expire on the
    // store's timer (expireStale), which resets the views of the stacks it changes.
    if (this.pendingOf.has(stack)) this.flush();
    const state = this.stacks.get(stack);
    if (!state) return NO_SEGMENTS;
    const view = state.view;
    return (view.rendered ??= this.assemble((view.dataRuns ??= this.renderData([stack])), this.renderStatus([stack])));
  }

  /** The exposition text of every snapshot family at `now` (unix seconds). */
  text(now: number): string {
    const days = this.daysText(now);
    return this.segments()
      .map((s) => (s.kind === 'days' ? days : Buffer.concat(s.parts).toString('utf8')))
      .join('');
  }

  /** cmdb_license_days_until_expiry at `now`: the one family computed at scrape time; of `only` when given. */
  daysText(now: number, only?: string): string {
    if (only === undefined || this.pendingOf.has(only)) this.flush();
    const series: Series[] = [];
    for (const stack of only === undefined ? this.stackNames() : [only]) {
      const license = this.stacks.get(stack)?.endpoints.get('license');
      const expiry = license?.samples.find((s) => s.name === EXPIRY);
      if (expiry) series.push({ labels: { stack }, value: daysUntilExpiry(expiry.value, now) });
    }
    return renderFamily(family(DAYS), series);
  }

  /** Small updates apply at once when nothing waits before them; the rest in slices, in order. */
  private enqueue(stack: string, update: Update, small: boolean): void {
    if (small && this.queue.length === 0) {
      runToEnd(update);
      return;
    }
    this.pendingOf.set(stack, (this.pendingOf.get(stack) ?? 0) + 1);
    this.queue.push(counted(update, () => {
      const n = (this.pendingOf.get(stack) ?? 1) - 1;
      if (n > 0) this.pendingOf.set(stack, n);
      else this.pendingOf.delete(stack);
    }));
    this.draining ??= this.drain();
  }

  /**
   * Resolves once every update of `stack` that arrived so far has been applied: a stack's scrape
   * does not wait for the other stacks' polls (with hundreds of stacks some update is nearly always
   * being prepared).
   */
  private async settledOf(stack: string): Promise<void> {
    while (this.pendingOf.has(stack) && this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const update = this.queue[0] as Update;
        if (update.next().done && this.queue[0] === update) this.queue.shift();
        else await nextTurn();
      }
    } finally {
      this.draining = null;
    }
  }

  /** Applies every pending update now (synchronous callers: they must not see a half-applied set). */
  private flush(): void {
    while (this.queue.length > 0) runToEnd(this.queue.shift() as Update);
  }

  /**
   * A change: assemble the segments right after the current burst of changes (coalesced), off the
   * scrape path. A scrape that arrives first assembles them itself; either way once per change.
   */
  private invalidate(data: boolean): void {
    this.rendered = null;
    if (data) this.dataRuns = null;
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    setImmediate(() => {
      this.renderScheduled = false;
      if (this.queue.length === 0) this.rendered ??= this.render();
    }).unref();
  }

  private set(stack: string, endpoint: DataEndpoint, update: (s: EndpointState) => EndpointState): void {
    const state = this.stacks.get(stack);
    const current = state?.endpoints.get(endpoint);
    if (!state || !current) return; // stack removed or endpoint disabled while the poll ran
    const next = update(current);
    state.endpoints.set(endpoint, next);
    this.marked(stack, next.lines !== current.lines || next.up !== current.up || next.forbidden !== current.forbidden);
    state.view.rendered = null;
    if (next.lines !== current.lines) state.view.dataRuns = null;
    this.invalidate(next.lines !== current.lines);
    if (next.up !== current.up || next.lastSuccess !== current.lastSuccess || next.samples !== current.samples) this.scheduleExpiry();
    for (const listener of this.appliedListeners) listener(stack, endpoint);
  }

  /**
   * Drops duplicate label sets (first wins), applies the stack's series cap, and renders the lines
   * with `stack` added: the label text of each series is formatted once, for both purposes. The
   * samples kept are the collector's own objects (see Labelled). When the lines come out byte for
   * byte as before, the old map is kept, so nothing served is re-made.
   */
  private *prepare(stack: string, endpoint: DataEndpoint, samples: readonly Sample[]): Generator<void, { samples: readonly Sample[]; lines: FamilyLines }> {
    // De-duplication per family by label text: no key string made per series.
    const seen = new Map<string, Set<string>>();
    const kept: Sample[] = [];
    const texts: string[] = [];
    let duplicates = 0;
    for (let i = 0; i < samples.length; i++) {
      if (i > 0 && i % SLICE === 0) yield;
      const s = samples[i] as Sample;
      const text = formatLabels(family(s.name).labels, { stack, ...s.labels });
      let inFamily = seen.get(s.name);
      if (!inFamily) seen.set(s.name, (inFamily = new Set()));
      if (inFamily.has(text)) {
        duplicates++;
        continue;
      }
      inFamily.add(text);
      kept.push(s);
      texts.push(text);
    }
    seen.clear();
    if (duplicates > 0) {
      this.opts.instruments.duplicateSeries.inc({ stack }, duplicates);
      this.opts.logger.debug({ stack, endpoint, duplicates }, 'merged duplicate series (first kept)');
    }
    const capped = this.cap(stack, endpoint, kept);
    yield;
    const lines = yield* renderLines({ samples: capped, texts: capped === kept ? texts : texts.slice(0, capped.length) });
    const old = this.stacks.get(stack)?.endpoints.get(endpoint)?.lines;
    const same = old !== undefined && sameLines(old, lines);
    return { samples: capped, lines: same && old ? old : lines };
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

  /** Assembles the segments: data runs from the endpoints' lines (only after a data change), status runs always. */
  private render(): Segment[] {
    const stacks = this.stackNames();
    return this.assemble((this.dataRuns ??= this.renderData(stacks)), this.renderStatus(stacks));
  }

  private assemble(data: readonly Buffer[][], status: ReadonlyMap<string, string>): Segment[] {
    let d = 0;
    return RUNS.map(({ kind, names }) => {
      if (kind === 'days') return { kind, parts: [] };
      if (kind === 'data') return { kind, parts: data[d++] ?? [] };
      const bytes = Buffer.from(names.map((n) => status.get(n) ?? '').join(''), 'utf8');
      return { kind, parts: bytes.length > 0 ? [bytes] : [] };
    });
  }

  private renderData(stacks: readonly string[]): Buffer[][] {
    const chunks = new Map<string, Buffer[]>();
    for (const stack of stacks) {
      for (const endpoint of DATA_ENDPOINTS) {
        for (const [name, pieces] of this.stacks.get(stack)?.endpoints.get(endpoint)?.lines ?? NO_LINES) {
          let list = chunks.get(name);
          if (!list) chunks.set(name, (list = []));
          list.push(...pieces);
        }
      }
    }
    return RUNS.filter((r) => r.kind === 'data').map(({ names }) =>
      joinSmall(names.flatMap((n) => {
        const list = chunks.get(n);
        return list ? [HEADERS.get(n) ?? EMPTY, ...list] : [];
      })),
    );
  }

  private renderStatus(stacks: readonly string[]): Map<string, string> {
    const status = new Map<string, Series[]>();
    const addStatus = (name: string, series: Series) => {
      let list = status.get(name);
      if (!list) status.set(name, (list = []));
      list.push(series);
    };
    for (const stack of stacks) {
      const state = this.stacks.get(stack);
      if (!state) continue;
      let count = 0;
      for (const endpoint of DATA_ENDPOINTS) {
        const s = state.endpoints.get(endpoint);
        if (!s) continue;
        count += s.samples.length;
        const labels = { stack, endpoint };
        addStatus('cmdb_endpoint_poll_interval_seconds', { labels, value: s.settings.intervalSeconds });
        // 0 until a first poll succeeds: an endpoint of a stack that cannot be reached reads down
        // from the start, not absent until its first poll has run out of retries.
        addStatus('cmdb_endpoint_up', { labels, value: s.up ?? 0 });
        addStatus('cmdb_endpoint_forbidden', { labels, value: s.forbidden ?? 0 });
        if (s.lastSuccess !== undefined) addStatus('cmdb_endpoint_last_success_timestamp_seconds', { labels, value: s.lastSuccess });
      }
      addStatus('cmdb_series', { labels: { stack }, value: count });
    }
    const out = new Map<string, string>();
    for (const [name, series] of status) {
      const f = family(name);
      out.set(name, renderFamily(f, sortedByLabels(f, series)));
    }
    return out;
  }
}

/** `update`, calling `done` once when it has run to its end. */
function* counted(update: Update, done: () => void): Update {
  try {
    yield* update;
  } finally {
    done();
  }
}

function runToEnd(update: Update): void {
  while (!update.next().done);
}
