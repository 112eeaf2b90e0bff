/**
 * What /metrics serves of the store (docs/design.md, "Serving /metrics"): every snapshot family in
 * catalogue order, assembled once per change from the pieces the store keeps (each endpoint's series
 * lines), as segments: runs of data families (made again only when some endpoint's series changed),
 * runs of status families (every poll changes them), and the place of
 * cmdb_license_days_until_expiry, the one family computed at scrape time. It serves what the store
 * has applied, a poll whole, and never waits for it. One stack's part (?stack=NAME) is a view of the
 * same pieces, assembled once per change of that stack.
 */
import { DATA_ENDPOINTS } from '../api/endpoints.js';
import { CATALOGUE, family } from '../metrics/catalogue.js';
import { formatLabels } from '../metrics/series-text.js';
import type { ChangeMarks, HeldEndpoint, SnapshotStore } from '../store/snapshot-store.js';
import { daysUntilExpiry } from '../time.js';
import type { Family, FamilySeries, Format } from './family.js';
import { TEXT_FORMAT } from './text-format.js';
import { joinSmall } from './text-lines.js';

/** What a scrape response is made from (responses.ts): the whole exposition, or one stack's view. */
export interface ExpositionSource {
  segments(): readonly Segment[];
  daysText(now: number): string | Buffer;
}

/**
 * A run of families of one kind, in catalogue order, as the pieces of bytes it is written from;
 * `days` holds none (computed per scrape). A data run is not copied into one Buffer: its pieces are
 * the endpoints' own pieces of family lines (text-lines.ts renderLines; small ones joined,
 * joinSmall), so a change costs no copy of the whole exposition, and a piece whose endpoint did not
 * change is the same Buffer.
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

/** Segments assembled, and the change counts they were assembled at. */
interface Assembled {
  readonly marks: ChangeMarks;
  readonly segments: Segment[];
  readonly dataRuns: Buffer[][];
}

/** A stack's view: its assembled segments, of the stack as it was added (a re-added stack's endpoints are a new map). */
interface StackView extends Assembled {
  readonly endpoints: ReadonlyMap<string, HeldEndpoint>;
}

export class Exposition implements ExpositionSource {
  private whole: Assembled | undefined;
  private readonly views = new Map<string, StackView>();
  private readonly headers: ReadonlyMap<string, Buffer>;
  private renderScheduled = false;
  private readonly unsubscribe: () => void;

  /**
   * `format` writes the headers, status and days families; the data runs are the store's rendered
   * lines under the format's headers (the text formats and OpenMetrics write the same sample lines).
   * `lazy`: assembled ahead of scrapes only once it was asked for (a format no scraper asks for
   * costs nothing).
   */
  constructor(
    readonly store: SnapshotStore,
    readonly format: Format = TEXT_FORMAT,
    opts: { readonly lazy?: boolean } = {},
  ) {
    this.headers = new Map(CATALOGUE.map((f) => [f.name, Buffer.from(format.header(f), 'utf8')]));
    this.unsubscribe = store.onChange(() => {
      if (!opts.lazy || this.whole) this.scheduleRender();
    });
  }

  /**
   * The exposition of every snapshot family, as segments in catalogue order; the `days` segment is
   * empty: fill it with daysText(now). The same array comes back until a part changes (responses.ts
   * makes a new body, and its gzip, only then). A scrape changes nothing: stale series expire on
   * the store's timer.
   */
  segments(): readonly Segment[] {
    const marks = this.store.version();
    const whole = this.whole;
    if (whole && whole.marks === marks) return whole.segments;
    const stacks = this.store.stackNames();
    const dataRuns = whole && whole.marks.data === marks.data ? whole.dataRuns : this.renderData(stacks);
    this.whole = { marks, dataRuns, segments: this.assemble(dataRuns, this.renderStatus(stacks)) };
    return this.whole.segments;
  }

  /**
   * One stack's part of the exposition: the same families and lines as in segments(), only this
   * stack's series, assembled once per change of the stack (a poll of another stack leaves it as it
   * is). Its pieces are the endpoints' own Buffers, shared with the whole exposition. A stack no
   * longer held has an empty exposition.
   */
  view(stack: string): ExpositionSource {
    return { segments: () => this.stackSegments(stack), daysText: (now) => this.daysText(now, stack) };
  }

  /** The exposition text of every snapshot family at `now` (unix seconds), as served. */
  text(now: number): string {
    const days = this.daysText(now).toString();
    return this.segments()
      .map((s) => (s.kind === 'days' ? days : Buffer.concat(s.parts).toString('utf8')))
      .join('');
  }

  /** cmdb_license_days_until_expiry at `now`: the one family computed at scrape time; of `only` when given. */
  daysText(now: number, only?: string): string | Buffer {
    const series: FamilySeries[] = [];
    for (const stack of only === undefined ? this.store.stackNames() : [only]) {
      const expiry = this.store.snapshot(stack, 'license')?.samples.find((s) => s.name === EXPIRY);
      if (expiry) series.push({ labels: { stack }, value: daysUntilExpiry(expiry.value, now) });
    }
    return this.format.write([{ family: family(DAYS), series }]);
  }

  /** Stops rendering ahead of scrapes (the process is shutting down). */
  close(): void {
    this.unsubscribe();
  }

  private stackSegments(stack: string): readonly Segment[] {
    const endpoints = this.store.endpoints(stack);
    const marks = this.store.changeMarks(stack) ?? NO_MARKS;
    if (!endpoints) {
      this.views.delete(stack);
      return NO_SEGMENTS;
    }
    const view = this.views.get(stack);
    if (view && view.endpoints === endpoints && view.marks === marks) return view.segments;
    const sameData = view !== undefined && view.endpoints === endpoints && view.marks.data === marks.data;
    const dataRuns = sameData ? view.dataRuns : this.renderData([stack]);
    const segments = this.assemble(dataRuns, this.renderStatus([stack]));
    this.views.set(stack, { endpoints, marks, dataRuns, segments });
    if (this.views.size > this.store.stackNames().length) for (const name of this.views.keys()) if (!this.store.hasStack(name)) this.views.delete(name);
    return segments;
  }

  /**
   * A change: assemble the segments right after the current burst of changes (coalesced), off the
   * scrape path. A scrape that arrives first assembles them itself; either way once per change.
   */
  private scheduleRender(): void {
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    setImmediate(() => {
      this.renderScheduled = false;
      this.segments();
    }).unref();
  }

  private assemble(data: readonly Buffer[][], status: ReadonlyMap<string, Buffer>): Segment[] {
    let d = 0;
    return RUNS.map(({ kind, names }) => {
      if (kind === 'days') return { kind, parts: [] };
      if (kind === 'data') return { kind, parts: data[d++] ?? [] };
      const bytes = Buffer.concat(names.flatMap((n) => status.get(n) ?? []));
      return { kind, parts: bytes.length > 0 ? [bytes] : [] };
    });
  }

  /** The data runs: per run, the family headers and the endpoints' pieces of lines, small pieces joined. */
  private renderData(stacks: readonly string[]): Buffer[][] {
    const chunks = this.dataPieces(stacks);
    return RUNS.filter((r) => r.kind === 'data').map(({ names }) => [...joinSmall(names.flatMap((n) => this.family(n, chunks.get(n))))]);
  }

  /** A data family's bytes: its head and pieces, none when it has no series. */
  private family(name: string, pieces: readonly Buffer[] | undefined): Buffer[] {
    const head = pieces && this.headers.get(name);
    return pieces && head ? [head, ...pieces] : [];
  }

  /** The pieces of every data family of `stacks`, by family name. */
  private dataPieces(stacks: readonly string[]): Map<string, Buffer[]> {
    const chunks = new Map<string, Buffer[]>();
    for (const stack of stacks) {
      const endpoints = this.store.endpoints(stack);
      for (const endpoint of DATA_ENDPOINTS) {
        const held = endpoints?.get(endpoint);
        if (!held) continue;
        for (const [name, pieces] of held.lines) {
          let list = chunks.get(name);
          if (!list) chunks.set(name, (list = []));
          list.push(...pieces);
        }
      }
    }
    return chunks;
  }

  /**
   * Only the snapshot families named in `names` (GET /metrics?name[]=…), in catalogue order, of
   * every stack or of `only`: made for the one request, not kept (as client_golang filters).
   */
  filtered(names: ReadonlySet<string>, now: number, only?: string): Buffer[] {
    const stacks = only === undefined ? this.store.stackNames() : this.store.hasStack(only) ? [only] : [];
    const wanted = CATALOGUE.filter((f) => f.origin === 'snapshot' && names.has(f.name));
    if (wanted.length === 0) return [];
    const data = this.dataPieces(stacks);
    const status = this.renderStatus(stacks);
    return wanted.flatMap((f) => {
      if (f.name === DAYS) return [toBuffer(this.daysText(now, only))];
      if (STATUS_FAMILIES.has(f.name)) return status.get(f.name) ?? [];
      return this.family(f.name, data.get(f.name));
    });
  }

  /** The status families of `stacks`, written, by family name. */
  private renderStatus(stacks: readonly string[]): Map<string, Buffer> {
    const status = new Map<string, FamilySeries[]>();
    const add = (name: string, series: FamilySeries) => {
      let list = status.get(name);
      if (!list) status.set(name, (list = []));
      list.push(series);
    };
    for (const stack of stacks) {
      const endpoints = this.store.endpoints(stack);
      if (!endpoints) continue;
      let count = 0;
      for (const endpoint of DATA_ENDPOINTS) {
        const s = endpoints.get(endpoint);
        if (!s) continue;
        count += s.samples.length;
        const labels = { stack, endpoint };
        add('cmdb_endpoint_poll_interval_seconds', { labels, value: s.settings.intervalSeconds });
        // 0 until a first poll succeeds: an endpoint of a stack that cannot be reached reads down
        // from the start, not absent until its first poll has run out of retries.
        add('cmdb_endpoint_up', { labels, value: s.up ?? 0 });
        add('cmdb_endpoint_forbidden', { labels, value: s.forbidden ?? 0 });
        if (s.lastSuccess !== undefined) add('cmdb_endpoint_last_success_timestamp_seconds', { labels, value: s.lastSuccess });
      }
      add('cmdb_series', { labels: { stack }, value: count });
    }
    const out = new Map<string, Buffer>();
    for (const [name, series] of status) out.set(name, toBuffer(this.format.write([sortedByLabels({ family: family(name), series })])));
    return out;
  }
}

const NO_MARKS: ChangeMarks = { data: -1, status: -1 };

/** The family with its series sorted by label text, so the output does not depend on the order of the stacks' endpoints. */
function sortedByLabels({ family: f, series }: Family): Family {
  const keyed = series.map((s) => ({ s, k: formatLabels(f.labels ?? [], s.labels as Readonly<Record<string, string>>) }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return { family: f, series: keyed.map((x) => x.s) };
}

export const toBuffer = (bytes: string | Buffer): Buffer => (typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes);
