/**
 * The prom-client instruments (catalogue families with origin `registry`): the exporter's own on
 * the registry the composition root passes down, each stack's on a registry of that stack. No
 * global registry: each test makes its own. The exposition renders them from the registries' JSON
 * (src/exposition/self-families.ts).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { family } from './catalogue.js';
import { VERSION } from '../version.js';

type Labels<T extends string> = Partial<Record<T, string | number>>;

/** A counter of one stack's (its `stack` label says which): the stack's own instrument counts it. */
export interface StackCounter<T extends string> {
  inc(labels: Labels<T>, value?: number): void;
}
export interface StackGauge<T extends string> {
  set(labels: Labels<T>, value: number): void;
  inc(labels: Labels<T>, value?: number): void;
}
export interface StackHistogram<T extends string> {
  observe(labels: Labels<T>, value: number): void;
  /** Starts a timer; the function it returns observes the seconds since. */
  startTimer(labels: Labels<T>): () => number;
}

export interface Instruments {
  readonly requestDuration: StackHistogram<'stack' | 'endpoint'>;
  readonly requests: StackCounter<'stack' | 'endpoint' | 'outcome'>;
  readonly tokenRequests: StackCounter<'stack' | 'outcome'>;
  readonly pollDuration: StackHistogram<'stack' | 'group'>;
  readonly pollSkipped: StackCounter<'stack' | 'group'>;
  readonly rateLimitBudget: StackGauge<'stack'>;
  readonly rateLimitWait: StackCounter<'stack'>;
  readonly rateLimitPausedUntil: StackGauge<'stack'>;
  readonly requestDemand: StackGauge<'stack'>;
  readonly actionJobsBacklog: StackGauge<'stack'>;
  readonly seriesDropped: StackCounter<'stack'>;
  readonly duplicateSeries: StackCounter<'stack'>;
  readonly pagesTruncated: StackCounter<'stack' | 'endpoint'>;
  readonly responseBytes: StackCounter<'stack' | 'endpoint'>;
  readonly connectorScans: StackCounter<'stack' | 'kind'>;
  readonly connectorSortFallbacks: StackCounter<'stack'>;
  readonly connectorScanInProgress: StackGauge<'stack'>;
  readonly connectorScanPagesRead: StackGauge<'stack'>;
  readonly connectorScanPagesExpected: StackGauge<'stack'>;
  readonly connectorScanBytes: StackGauge<'stack'>;
  readonly connectorScanStart: StackGauge<'stack'>;
  readonly connectorScanPageSize: StackGauge<'stack'>;
  readonly connectorIncrementalOffUntil: StackGauge<'stack'>;
  readonly reloadSuccessful: Gauge;
  readonly reloadSuccessTimestamp: Gauge;
  readonly buildInfo: Gauge<'version' | 'node_version'>;
  readonly httpRefused: Counter<'reason'>;
  /** Where the series live: each stack's registry, and the exporter's own (no `stack` label). */
  readonly registries: SelfRegistries;
}

/** The registries of the exporter's own metrics, for the per-stack and exporter-only targets. */
export interface SelfRegistries {
  /** The stack's own instruments (every series with its `stack` label), undefined for a stack never seen. */
  stack(name: string): Registry | undefined;
  /** The metrics without a `stack` label: process, Node.js, reloads, HTTP refusals, shard (the registry createInstruments was given). */
  readonly exporter: Registry;
  /** Every stack's registry, in the order the stacks were first seen. */
  stacks(): Registry[];
  /** Drops a stack's instruments with its registry (removeStackInstruments). */
  forget(name: string): void;
  /**
   * Per-stack families made only in some configurations (--storage.path's): each in every stack's
   * registry, now and later (and so on the whole /metrics as the others are).
   */
  extend(families: readonly ExtraFamily[]): Array<StackCounter<string> & StackGauge<string>>;
}

/** A per-stack family added by SelfRegistries.extend. */
export interface ExtraFamily {
  readonly name: string;
  readonly kind: 'counter' | 'gauge';
  /** A gauge read when rendered: the stack's series and values then. */
  readonly read?: (stack: string) => ReadonlyArray<{ readonly labels: Labels<string>; readonly value: number }>;
}

type PerStackKey = { [K in keyof Instruments]: Instruments[K] extends StackCounter<string> | StackGauge<string> | StackHistogram<string> ? K : never }[keyof Instruments];
type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;

/** Per-stack instruments: name, kind, extra options, in the order the families appear on /metrics. */
const PER_STACK: ReadonlyArray<readonly [PerStackKey, string, 'counter' | 'gauge' | 'histogram', number[]?]> = [
  ['requestDuration', 'cmdb_endpoint_request_duration_seconds', 'histogram', [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]],
  ['requests', 'cmdb_endpoint_requests_total', 'counter'],
  ['tokenRequests', 'cmdb_token_requests_total', 'counter'],
  ['pollDuration', 'cmdb_poll_duration_seconds', 'histogram', [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]],
  ['pollSkipped', 'cmdb_poll_skipped_total', 'counter'],
  ['rateLimitBudget', 'cmdb_rate_limit_requests_per_minute', 'gauge'],
  ['rateLimitWait', 'cmdb_rate_limit_wait_seconds_total', 'counter'],
  ['rateLimitPausedUntil', 'cmdb_rate_limit_paused_until_timestamp_seconds', 'gauge'],
  ['requestDemand', 'cmdb_exporter_request_demand_ratio', 'gauge'],
  ['actionJobsBacklog', 'cmdb_action_jobs_backlog', 'gauge'],
  ['seriesDropped', 'cmdb_series_dropped_total', 'counter'],
  ['duplicateSeries', 'cmdb_duplicate_series_total', 'counter'],
  ['pagesTruncated', 'cmdb_pages_truncated_total', 'counter'],
  ['responseBytes', 'cmdb_endpoint_response_bytes_total', 'counter'],
  ['connectorScans', 'cmdb_connector_scans_total', 'counter'],
  ['connectorSortFallbacks', 'cmdb_connector_sort_fallbacks_total', 'counter'],
  ['connectorScanInProgress', 'cmdb_connector_scan_in_progress', 'gauge'],
  ['connectorScanPagesRead', 'cmdb_connector_scan_pages_read', 'gauge'],
  ['connectorScanPagesExpected', 'cmdb_connector_scan_pages_expected', 'gauge'],
  ['connectorScanBytes', 'cmdb_connector_scan_bytes', 'gauge'],
  ['connectorScanStart', 'cmdb_connector_scan_start_timestamp_seconds', 'gauge'],
  ['connectorScanPageSize', 'cmdb_connector_scan_page_size', 'gauge'],
  ['connectorIncrementalOffUntil', 'cmdb_connector_incremental_off_until_timestamp_seconds', 'gauge'],
];

function spec<T extends string>(name: string, registers: Registry[]) {
  const f = family(name);
  if (f.origin !== 'registry') throw new Error(`${name} is not a registry instrument`);
  return { name, help: f.help, labelNames: f.labels as T[], registers };
}

/**
 * The instruments of every stack, each stack's in a registry of its own: whose series is whose is
 * where it was counted, never read back out of a label in text (the per-stack targets render the
 * stack's registry as it is; the whole /metrics gathers every stack's series of a family into one).
 */
class PerStack {
  private readonly stacks = new Map<string, { registry: Registry; metrics: Record<PerStackKey, AnyMetric>; extra: Map<string, AnyMetric> }>();
  private readonly extraFamilies: ExtraFamily[] = [];

  of(stack: string): Record<PerStackKey, AnyMetric> {
    return this.entry(stack).metrics;
  }

  /** The stack's metric of an extra family (extend). */
  extraOf(stack: string, name: string): AnyMetric {
    return this.entry(stack).extra.get(name) as AnyMetric;
  }

  /** Adds families to every stack's registry, and to those made later. */
  extend(families: readonly ExtraFamily[]): void {
    this.extraFamilies.push(...families);
    for (const [stack, e] of this.stacks) for (const f of families) e.extra.set(f.name, extraMetric(f, stack, e.registry));
  }

  registry(stack: string): Registry | undefined {
    return this.stacks.get(stack)?.registry;
  }

  drop(stack: string): void {
    this.stacks.delete(stack);
  }

  registries(): Registry[] {
    return [...this.stacks.values()].map((e) => e.registry);
  }

  private entry(stack: string) {
    let entry = this.stacks.get(stack);
    if (!entry) {
      const registry = new Registry();
      const metrics = {} as Record<PerStackKey, AnyMetric>;
      for (const [key, name, kind, buckets] of PER_STACK) {
        const options = spec<string>(name, [registry]);
        metrics[key] = kind === 'counter' ? new Counter(options) : kind === 'gauge' ? new Gauge(options) : new Histogram({ ...options, buckets });
      }
      const extra = new Map(this.extraFamilies.map((f) => [f.name, extraMetric(f, stack, registry)] as const));
      entry = { registry, metrics, extra };
      this.stacks.set(stack, entry);
    }
    return entry;
  }
}

function extraMetric(f: ExtraFamily, stack: string, registry: Registry): AnyMetric {
  const options = spec<string>(f.name, [registry]);
  if (f.kind === 'counter') return new Counter(options);
  const read = f.read;
  if (!read) return new Gauge(options);
  return new Gauge({
    ...options,
    collect() {
      this.reset();
      for (const v of read(stack)) this.set(v.labels, v.value);
    },
  });
}

const stackOf = (labels: Labels<string>): string => String(labels.stack ?? '');

function router(metricOf: (stack: string) => AnyMetric): StackCounter<string> & StackGauge<string> & StackHistogram<string> {
  const metric = (labels: Labels<string>) => metricOf(stackOf(labels));
  return {
    inc: (labels, value) => (metric(labels) as Counter<string>).inc(labels, value ?? 1),
    set: (labels, value) => (metric(labels) as Gauge<string>).set(labels, value),
    observe: (labels, value) => (metric(labels) as Histogram<string>).observe(labels, value),
    startTimer: (labels) => (metric(labels) as Histogram<string>).startTimer(labels),
  };
}

/**
 * prom-client default gauges whose names end in _total, which promtool rejects for a non-counter.
 * Each only sums the per-type gauge of the same name without _total, which stays.
 */
export const DROPPED_DEFAULT_METRICS = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
] as const;

export function createInstruments(registry: Registry, opts: { defaultMetrics?: boolean } = {}): Instruments {
  if (opts.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry });
    for (const name of DROPPED_DEFAULT_METRICS) registry.removeSingleMetric(name);
  }
  const perStack = new PerStack();
  const stacked = {} as Record<PerStackKey, StackCounter<string> & StackGauge<string> & StackHistogram<string>>;
  for (const [key] of PER_STACK) stacked[key] = router((stack) => perStack.of(stack)[key]);
  const own = [registry];
  const ins: Instruments = {
    ...stacked,
    reloadSuccessful: new Gauge(spec<never>('cmdb_config_last_reload_successful', own)),
    reloadSuccessTimestamp: new Gauge(spec<never>('cmdb_config_last_reload_success_timestamp_seconds', own)),
    buildInfo: new Gauge(spec<'version' | 'node_version'>('cmdb_exporter_build_info', own)),
    httpRefused: new Counter(spec<'reason'>('cmdb_exporter_http_requests_refused_total', own)),
    registries: {
      stack: (name) => perStack.registry(name),
      exporter: registry,
      stacks: () => perStack.registries(),
      forget: (name) => perStack.drop(name),
      extend: (families) => {
        perStack.extend(families);
        return families.map((f) => router((stack) => perStack.extraOf(stack, f.name)));
      },
    },
  };
  ins.buildInfo.set({ version: VERSION, node_version: process.version }, 1);
  ins.reloadSuccessful.set(1);
  return ins;
}

/**
 * Start a stack's counters at 0, so that rate() and increase() work from the first scrape and
 * dashboards show a flat line instead of "no data" until the first event; and its state gauges at
 * 0 for a new runtime. `running`: the stack keeps running with new settings (a reload in place):
 * its gauges still say what its parts hold (a connector scan in progress, an Action job backlog),
 * so only those that are missing (an endpoint just enabled) are started.
 */
export function initStackInstruments(
  ins: Instruments,
  stack: string,
  groups: readonly string[],
  endpoints: readonly string[],
  running = false,
): void {
  const zero = (gauge: StackGauge<'stack'>) => (running ? gauge.inc({ stack }, 0) : gauge.set({ stack }, 0));
  for (const outcome of ['success', 'rejected', 'error']) ins.tokenRequests.inc({ stack, outcome }, 0);
  for (const group of groups) ins.pollSkipped.inc({ stack, group }, 0);
  ins.rateLimitWait.inc({ stack }, 0);
  zero(ins.rateLimitPausedUntil);
  if (endpoints.includes('action_jobs')) zero(ins.actionJobsBacklog);
  ins.seriesDropped.inc({ stack }, 0);
  ins.duplicateSeries.inc({ stack }, 0);
  for (const endpoint of endpoints) {
    if (endpoint === 'connector' || endpoint === 'actions') ins.pagesTruncated.inc({ stack, endpoint }, 0);
    ins.responseBytes.inc({ stack, endpoint }, 0);
  }
  if (endpoints.includes('connector')) {
    for (const kind of ['full', 'incremental']) ins.connectorScans.inc({ stack, kind }, 0);
    ins.connectorSortFallbacks.inc({ stack }, 0);
    zero(ins.connectorScanInProgress);
    zero(ins.connectorIncrementalOffUntil);
  }
}

/**
 * Forgets every series of a stack that is no longer configured: its instruments go with their
 * registry, so that a removed stack leaves nothing behind on /metrics until the next restart.
 */
export async function removeStackInstruments(ins: Instruments, stack: string): Promise<void> {
  ins.registries.forget(stack);
}

/**
 * cmdb_exporter_shard and cmdb_exporter_stacks: how the stacks are split over replicas, so that a
 * dashboard shows the split. `stacks` is read at scrape time, so a reload that changes the share
 * shows at once.
 */
export function registerShardInstruments(
  /** The exporter's own registry (instruments.registries.exporter). */
  registry: Registry,
  assignment: { readonly shard: number; readonly total: number },
  stacks: () => number,
): void {
  const registers = [registry];
  const shard = new Gauge(spec<'shard' | 'total'>('cmdb_exporter_shard', registers));
  shard.set({ shard: String(assignment.shard), total: String(assignment.total) }, 1);
  new Gauge({
    ...spec<never>('cmdb_exporter_stacks', registers),
    collect() {
      this.set(stacks());
    },
  });
}

/** The instruments of --storage.path (src/persist/): only registered when state is kept. */
export interface StateInstruments {
  readonly stateWrites: StackCounter<'stack' | 'result'>;
  readonly stateBytes: StackGauge<'stack'>;
  readonly stateLastWrite: StackGauge<'stack'>;
}

/**
 * cmdb_exporter_state_* and cmdb_endpoint_restored_age_seconds, in each stack's registry (and so on
 * the whole /metrics and the stack's own target alike). `restored` is read at scrape time: the age
 * of each endpoint's series still served from restored state grows until its first successful
 * poll, then its series goes.
 */
export function createStateInstruments(
  ins: Instruments,
  restored: () => ReadonlyArray<{ readonly stack: string; readonly endpoint: string; readonly ageSeconds: number }>,
): StateInstruments {
  const ages = (stack: string) =>
    restored()
      .filter((r) => r.stack === stack)
      .map((r) => ({ labels: { stack, endpoint: r.endpoint }, value: Math.max(0, Math.round(r.ageSeconds * 1000) / 1000) }));
  const [, stateWrites, stateBytes, stateLastWrite] = ins.registries.extend([
    { name: 'cmdb_endpoint_restored_age_seconds', kind: 'gauge', read: ages },
    { name: 'cmdb_exporter_state_writes_total', kind: 'counter' },
    { name: 'cmdb_exporter_state_bytes', kind: 'gauge' },
    { name: 'cmdb_exporter_state_last_write_timestamp_seconds', kind: 'gauge' },
  ]);
  return { stateWrites, stateBytes, stateLastWrite } as StateInstruments;
}
