/**
 * The newest sample set per (stack, endpoint), swapped whole in one synchronous step, with the
 * freshness rules of metrics.md:
 * - a successful poll replaces the endpoint's series wholesale (vanished entities vanish at once);
 * - a failed poll sets cmdb_endpoint_up to 0 at once and keeps the last good series until the last
 *   success is older than the endpoint's stale limit, then drops them.
 * Rendering follows the data: an endpoint's series lines are rendered once, when its poll swaps
 * them in (each label set formatted once, for de-duplication and output alike), and the exposition
 * is assembled from those pieces once per change. A change to one endpoint re-renders only that
 * endpoint; a poll that changes only status (up, last success) re-renders no data at all. Only
 * cmdb_license_days_until_expiry is computed at scrape time.
 */
import { DATA_ENDPOINTS, type DataEndpoint } from '../api/endpoints.js';
import { CATALOGUE, family, type MetricFamily } from '../metrics/catalogue.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Sample } from '../metrics/sample.js';
import type { Logger } from '../logger.js';
import { daysUntilExpiry } from '../time.js';
import { escapeHelp, formatLabels, formatValue, renderFamily, type Series } from './exposition.js';

export interface EndpointSettings {
  readonly intervalSeconds: number;
  readonly staleAfterSeconds: number;
}

export interface EndpointSnapshot {
  readonly samples: readonly Sample[];
  /** Undefined until the first poll finished. */
  readonly up?: 0 | 1;
  /** 1 while the newest poll was refused with 403. */
  readonly forbidden?: 0 | 1;
  readonly lastSuccess?: number;
}

interface EndpointState extends EndpointSnapshot {
  readonly settings: EndpointSettings;
  /** The samples' exposition lines per family, sorted; rendered when the samples were swapped in. */
  readonly lines: ReadonlyMap<string, string>;
}

const NO_LINES: ReadonlyMap<string, string> = new Map();

interface StackState {
  readonly endpoints: Map<DataEndpoint, EndpointState>;
  readonly maxSeries: number;
  readonly capped: Set<DataEndpoint>;
}

const DAYS = 'cmdb_license_days_until_expiry';
const EXPIRY = 'cmdb_license_expiry_timestamp_seconds';
const SNAPSHOT_FAMILIES = CATALOGUE.filter((f) => f.origin === 'snapshot');

export class SnapshotStore {
  private readonly stacks = new Map<string, StackState>();
  /** Rendered text per family, in catalogue order; null when a change has not been rendered yet. */
  private rendered: Map<string, string> | null = null;
  private renderScheduled = false;

  constructor(private readonly opts: { instruments: Instruments; logger: Logger }) {}

  /**
   * Adds `stack`, or re-adds it after a restart with a changed configuration: then each endpoint
   * still enabled keeps what it holds (series, up, last success) under its new settings until the new
   * runtime's first poll replaces it, so a reload neither drops the data nor makes /readyz wait.
   */
  addStack(stack: string, endpoints: ReadonlyMap<DataEndpoint, EndpointSettings>, maxSeries: number): void {
    const previous = this.stacks.get(stack);
    const state: StackState = { endpoints: new Map(), maxSeries, capped: new Set() };
    for (const [endpoint, settings] of endpoints) {
      const held = previous?.endpoints.get(endpoint);
      state.endpoints.set(endpoint, held ? { ...held, settings } : { settings, samples: [], lines: NO_LINES });
    }
    this.stacks.set(stack, state);
    this.invalidate();
  }

  removeStack(stack: string): void {
    if (this.stacks.delete(stack)) this.invalidate();
  }

  snapshot(stack: string, endpoint: DataEndpoint): EndpointSnapshot | undefined {
    return this.stacks.get(stack)?.endpoints.get(endpoint);
  }

  /** A successful poll: `samples` replace the endpoint's series wholesale. */
  succeed(stack: string, endpoint: DataEndpoint, samples: readonly Sample[], at: number): void {
    this.set(stack, endpoint, (s) => ({ ...s, ...this.prepare(stack, endpoint, samples), up: 1, forbidden: 0, lastSuccess: at }));
  }

  /** A successful poll that needed no request: the series already held are still current. */
  confirm(stack: string, endpoint: DataEndpoint, at: number): void {
    this.set(stack, endpoint, (s) => ({ ...s, up: 1, forbidden: 0, lastSuccess: at }));
  }

  /**
   * A failed poll: up 0 at once. `partial`, when given, replaces the series (a poll of several ids
   * where some failed: fresh results merged with the last good ones of the failed ids).
   */
  fail(stack: string, endpoint: DataEndpoint, partial?: readonly Sample[], forbidden = false): void {
    this.set(stack, endpoint, (s) => ({ ...s, ...(partial ? this.prepare(stack, endpoint, partial) : {}), up: 0, forbidden: forbidden ? 1 : 0 }));
  }

  /** Drop the series of failing endpoints whose last success is older than their stale limit. */
  expireStale(now: number): void {
    for (const [stack, state] of this.stacks) {
      for (const [endpoint, s] of state.endpoints) {
        if (s.up !== 0 || s.samples.length === 0) continue;
        const age = now - (s.lastSuccess ?? -Infinity);
        if (age > s.settings.staleAfterSeconds) {
          state.endpoints.set(endpoint, { ...s, samples: [], lines: NO_LINES });
          this.invalidate();
          this.opts.logger.info(
            { stack, endpoint, staleAfterSeconds: s.settings.staleAfterSeconds },
            'dropped the series of a failing endpoint: its last success is older than the stale limit',
          );
        }
      }
    }
  }

  seriesCount(stack: string): number {
    let n = 0;
    for (const s of this.stacks.get(stack)?.endpoints.values() ?? []) n += s.samples.length;
    return n;
  }

  /** The exposition text of every snapshot family at `now` (unix seconds). */
  text(now: number): string {
    this.expireStale(now);
    if (!this.rendered) this.rendered = this.render();
    const parts: string[] = [];
    for (const [name, text] of this.rendered) parts.push(name === DAYS ? this.renderDays(now) : text);
    return parts.join('');
  }

  /**
   * A change: assemble the text right after the current burst of changes (coalesced), off the scrape
   * path. A scrape that arrives first assembles it itself; either way once per change.
   */
  private invalidate(): void {
    this.rendered = null;
    if (this.renderScheduled) return;
    this.renderScheduled = true;
    setImmediate(() => {
      this.renderScheduled = false;
      this.rendered ??= this.render();
    }).unref();
  }

  private set(stack: string, endpoint: DataEndpoint, update: (s: EndpointState) => EndpointState): void {
    const state = this.stacks.get(stack);
    const current = state?.endpoints.get(endpoint);
    if (!state || !current) return; // stack removed or endpoint disabled while the poll ran
    state.endpoints.set(endpoint, update(current));
    this.invalidate();
  }

  /**
   * Adds `stack`, drops duplicate label sets (first wins), applies the stack's series cap, and
   * renders the lines: the label text of each series is formatted once, for both purposes.
   */
  private prepare(stack: string, endpoint: DataEndpoint, samples: readonly Sample[]): { samples: Sample[]; lines: Map<string, string> } {
    const seen = new Set<string>();
    const kept: Array<{ sample: Sample; text: string }> = [];
    let duplicates = 0;
    for (const s of samples) {
      const labels = { stack, ...s.labels };
      const text = formatLabels(family(s.name).labels, labels);
      const key = s.name + text;
      if (seen.has(key)) {
        duplicates++;
        continue;
      }
      seen.add(key);
      kept.push({ sample: { name: s.name, labels, value: s.value }, text });
    }
    if (duplicates > 0) {
      this.opts.instruments.duplicateSeries.inc({ stack }, duplicates);
      this.opts.logger.debug({ stack, endpoint, duplicates }, 'merged duplicate series (first kept)');
    }
    const capped = this.cap(stack, endpoint, kept);
    return { samples: capped.map((k) => k.sample), lines: renderLines(capped) };
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

  /** Assembles the text per family from the endpoints' rendered lines plus the status families. */
  private render(): Map<string, string> {
    const chunks = new Map<string, string[]>();
    const status = new Map<string, Series[]>();
    const addStatus = (name: string, series: Series) => {
      let list = status.get(name);
      if (!list) status.set(name, (list = []));
      list.push(series);
    };
    for (const stack of [...this.stacks.keys()].sort()) {
      const state = this.stacks.get(stack);
      if (!state) continue;
      let count = 0;
      for (const endpoint of DATA_ENDPOINTS) {
        const s = state.endpoints.get(endpoint);
        if (!s) continue;
        for (const [name, text] of s.lines) {
          let list = chunks.get(name);
          if (!list) chunks.set(name, (list = []));
          list.push(text);
        }
        count += s.samples.length;
        const labels = { stack, endpoint };
        addStatus('cmdb_endpoint_poll_interval_seconds', { labels, value: s.settings.intervalSeconds });
        if (s.up !== undefined) addStatus('cmdb_endpoint_up', { labels, value: s.up });
        if (s.up !== undefined) addStatus('cmdb_endpoint_forbidden', { labels, value: s.forbidden ?? 0 });
        if (s.lastSuccess !== undefined) addStatus('cmdb_endpoint_last_success_timestamp_seconds', { labels, value: s.lastSuccess });
      }
      addStatus('cmdb_series', { labels: { stack }, value: count });
    }
    const out = new Map<string, string>();
    for (const f of SNAPSHOT_FAMILIES) {
      const data = chunks.get(f.name);
      out.set(f.name, data ? `${header(f)}${data.join('')}` : renderFamily(f, sortedByLabels(f, status.get(f.name) ?? [])));
    }
    return out;
  }

  private renderDays(now: number): string {
    const series: Series[] = [];
    for (const stack of [...this.stacks.keys()].sort()) {
      const license = this.stacks.get(stack)?.endpoints.get('license');
      const expiry = license?.samples.find((s) => s.name === EXPIRY);
      if (expiry) series.push({ labels: { stack }, value: daysUntilExpiry(expiry.value, now) });
    }
    return renderFamily(family(DAYS), series);
  }
}

function sortedByLabels(f: MetricFamily, series: Series[]): Series[] {
  const keyed = series.map((s) => ({ s, k: formatLabels(f.labels, s.labels) }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return keyed.map((x) => x.s);
}

function header(f: MetricFamily): string {
  return `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n`;
}

/** Lines per family, sorted by label text so the output does not depend on response order. */
function renderLines(series: ReadonlyArray<{ sample: Sample; text: string }>): Map<string, string> {
  const byFamily = new Map<string, Array<{ sample: Sample; text: string }>>();
  for (const s of series) {
    let list = byFamily.get(s.sample.name);
    if (!list) byFamily.set(s.sample.name, (list = []));
    list.push(s);
  }
  const out = new Map<string, string>();
  for (const [name, list] of byFamily) {
    list.sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
    out.set(name, list.map((s) => `${name}${s.text} ${formatValue(s.sample.value)}\n`).join(''));
  }
  return out;
}
