/**
 * The prom-client instruments (catalogue families with origin `registry`), created on one registry
 * that the composition root passes down. No global registry: each test makes its own.
 */
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import { family } from './catalogue.js';
import { VERSION } from '../version.js';

type L<T extends string> = T;

export interface Instruments {
  readonly requestDuration: Histogram<L<'stack' | 'endpoint'>>;
  readonly requests: Counter<L<'stack' | 'endpoint' | 'outcome'>>;
  readonly tokenRequests: Counter<L<'stack' | 'outcome'>>;
  readonly pollDuration: Histogram<L<'stack' | 'group'>>;
  readonly pollSkipped: Counter<L<'stack' | 'group'>>;
  readonly rateLimitBudget: Gauge<L<'stack'>>;
  readonly rateLimitWait: Counter<L<'stack'>>;
  readonly rateLimitPausedUntil: Gauge<L<'stack'>>;
  readonly requestDemand: Gauge<L<'stack'>>;
  readonly actionJobsBacklog: Gauge<L<'stack'>>;
  readonly seriesDropped: Counter<L<'stack'>>;
  readonly duplicateSeries: Counter<L<'stack'>>;
  readonly pagesTruncated: Counter<L<'stack' | 'endpoint'>>;
  readonly responseBytes: Counter<L<'stack' | 'endpoint'>>;
  readonly connectorScans: Counter<L<'stack' | 'kind'>>;
  readonly connectorSortFallbacks: Counter<L<'stack'>>;
  readonly connectorScanInProgress: Gauge<L<'stack'>>;
  readonly connectorScanPagesRead: Gauge<L<'stack'>>;
  readonly connectorScanPagesExpected: Gauge<L<'stack'>>;
  readonly connectorScanBytes: Gauge<L<'stack'>>;
  readonly connectorScanStart: Gauge<L<'stack'>>;
  readonly connectorScanPageSize: Gauge<L<'stack'>>;
  readonly connectorIncrementalOffUntil: Gauge<L<'stack'>>;
  readonly reloadSuccessful: Gauge;
  readonly reloadSuccessTimestamp: Gauge;
  readonly buildInfo: Gauge<L<'version' | 'node_version'>>;
  readonly httpRefused: Counter<L<'reason'>>;
}

function spec<T extends string>(name: string, registry: Registry) {
  const f = family(name);
  if (f.origin !== 'registry') throw new Error(`${name} is not a registry instrument`);
  return { name, help: f.help, labelNames: f.labels as T[], registers: [registry] };
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
  const ins: Instruments = {
    requestDuration: new Histogram({
      ...spec<'stack' | 'endpoint'>('cmdb_endpoint_request_duration_seconds', registry),
      buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    }),
    requests: new Counter(spec<'stack' | 'endpoint' | 'outcome'>('cmdb_endpoint_requests_total', registry)),
    tokenRequests: new Counter(spec<'stack' | 'outcome'>('cmdb_token_requests_total', registry)),
    pollDuration: new Histogram({
      ...spec<'stack' | 'group'>('cmdb_poll_duration_seconds', registry),
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    }),
    pollSkipped: new Counter(spec<'stack' | 'group'>('cmdb_poll_skipped_total', registry)),
    rateLimitBudget: new Gauge(spec<'stack'>('cmdb_rate_limit_requests_per_minute', registry)),
    rateLimitWait: new Counter(spec<'stack'>('cmdb_rate_limit_wait_seconds_total', registry)),
    rateLimitPausedUntil: new Gauge(spec<'stack'>('cmdb_rate_limit_paused_until_timestamp_seconds', registry)),
    requestDemand: new Gauge(spec<'stack'>('cmdb_exporter_request_demand_ratio', registry)),
    actionJobsBacklog: new Gauge(spec<'stack'>('cmdb_action_jobs_backlog', registry)),
    seriesDropped: new Counter(spec<'stack'>('cmdb_series_dropped_total', registry)),
    duplicateSeries: new Counter(spec<'stack'>('cmdb_duplicate_series_total', registry)),
    pagesTruncated: new Counter(spec<'stack' | 'endpoint'>('cmdb_pages_truncated_total', registry)),
    responseBytes: new Counter(spec<'stack' | 'endpoint'>('cmdb_endpoint_response_bytes_total', registry)),
    connectorScans: new Counter(spec<'stack' | 'kind'>('cmdb_connector_scans_total', registry)),
    connectorSortFallbacks: new Counter(spec<'stack'>('cmdb_connector_sort_fallbacks_total', registry)),
    connectorScanInProgress: new Gauge(spec<'stack'>('cmdb_connector_scan_in_progress', registry)),
    connectorScanPagesRead: new Gauge(spec<'stack'>('cmdb_connector_scan_pages_read', registry)),
    connectorScanPagesExpected: new Gauge(spec<'stack'>('cmdb_connector_scan_pages_expected', registry)),
    connectorScanBytes: new Gauge(spec<'stack'>('cmdb_connector_scan_bytes', registry)),
    connectorScanStart: new Gauge(spec<'stack'>('cmdb_connector_scan_start_timestamp_seconds', registry)),
    connectorScanPageSize: new Gauge(spec<'stack'>('cmdb_connector_scan_page_size', registry)),
    connectorIncrementalOffUntil: new Gauge(spec<'stack'>('cmdb_connector_incremental_off_until_timestamp_seconds', registry)),
    reloadSuccessful: new Gauge(spec<never>('cmdb_config_last_reload_successful', registry)),
    reloadSuccessTimestamp: new Gauge(spec<never>('cmdb_config_last_reload_success_timestamp_seconds', registry)),
    buildInfo: new Gauge(spec<'version' | 'node_version'>('cmdb_exporter_build_info', registry)),
    httpRefused: new Counter(spec<'reason'>('cmdb_exporter_http_requests_refused_total', registry)),
  };
  ins.buildInfo.set({ version: VERSION, node_version: process.version }, 1);
  ins.reloadSuccessful.set(1);
  return ins;
}

/**
 * Start a stack's counters at 0, so that rate() and increase() work from the first scrape and
 * dashboards show a flat line instead of "no data" until the first event.
 */
export function initStackInstruments(
  ins: Instruments,
  stack: string,
  groups: readonly string[],
  endpoints: readonly string[],
): void {
  for (const outcome of ['success', 'rejected', 'error']) ins.tokenRequests.inc({ stack, outcome }, 0);
  for (const group of groups) ins.pollSkipped.inc({ stack, group }, 0);
  ins.rateLimitWait.inc({ stack }, 0);
  ins.rateLimitPausedUntil.set({ stack }, 0);
  if (endpoints.includes('action_jobs')) ins.actionJobsBacklog.set({ stack }, 0);
  ins.seriesDropped.inc({ stack }, 0);
  ins.duplicateSeries.inc({ stack }, 0);
  for (const endpoint of endpoints) {
    if (endpoint === 'connector' || endpoint === 'actions') ins.pagesTruncated.inc({ stack, endpoint }, 0);
    ins.responseBytes.inc({ stack, endpoint }, 0);
  }
  if (endpoints.includes('connector')) {
    for (const kind of ['full', 'incremental']) ins.connectorScans.inc({ stack, kind }, 0);
    ins.connectorSortFallbacks.inc({ stack }, 0);
    ins.connectorScanInProgress.set({ stack }, 0);
    ins.connectorIncrementalOffUntil.set({ stack }, 0);
  }
}

/**
 * Forgets every series of a stack that is no longer configured, in every per-stack instrument, so
 * that a removed stack leaves nothing behind on /metrics until the next restart.
 */
export async function removeStackInstruments(ins: Instruments, stack: string): Promise<void> {
  // Every instrument: those without a `stack` label simply have no series that match.
  const perStack = Object.values(ins) as Array<Counter<string> | Gauge<string> | Histogram<string>>;
  for (const metric of perStack) {
    const { values } = await metric.get();
    const seen = new Set<string>();
    for (const { labels } of values) {
      if (labels.stack !== stack) continue;
      // Histogram buckets carry `le`; the series to remove is the label set without it.
      const { le: _bucket, ...own } = labels as Record<string, string | number | undefined>;
      const key = JSON.stringify(own);
      if (seen.has(key)) continue;
      seen.add(key);
      metric.remove(own as Record<string, string | number>);
    }
  }
}

/**
 * cmdb_exporter_shard and cmdb_exporter_stacks: how the stacks are split over replicas, so that a
 * dashboard shows the split. `stacks` is read at scrape time, so a reload that changes the share
 * shows at once.
 */
export function registerShardInstruments(
  registry: Registry,
  assignment: { readonly shard: number; readonly total: number },
  stacks: () => number,
): void {
  const shard = new Gauge(spec<'shard' | 'total'>('cmdb_exporter_shard', registry));
  shard.set({ shard: String(assignment.shard), total: String(assignment.total) }, 1);
  new Gauge({
    ...spec<never>('cmdb_exporter_stacks', registry),
    collect() {
      this.set(stacks());
    },
  });
}

/** The instruments of --storage.path (src/persist/): only registered when state is kept. */
export interface StateInstruments {
  readonly stateWrites: Counter<L<'stack' | 'result'>>;
  readonly stateBytes: Gauge<L<'stack'>>;
  readonly stateLastWrite: Gauge<L<'stack'>>;
}

/**
 * cmdb_exporter_state_* and cmdb_endpoint_restored_age_seconds. `restored` is read at scrape time:
 * the age of each endpoint's series still served from restored state grows until its first
 * successful poll, then its series goes.
 */
export function createStateInstruments(
  registry: Registry,
  restored: () => ReadonlyArray<{ readonly stack: string; readonly endpoint: string; readonly ageSeconds: number }>,
): StateInstruments {
  new Gauge({
    ...spec<'stack' | 'endpoint'>('cmdb_endpoint_restored_age_seconds', registry),
    collect() {
      this.reset();
      for (const r of restored()) this.set({ stack: r.stack, endpoint: r.endpoint }, Math.max(0, Math.round(r.ageSeconds * 1000) / 1000));
    },
  });
  return {
    stateWrites: new Counter(spec<'stack' | 'result'>('cmdb_exporter_state_writes_total', registry)),
    stateBytes: new Gauge(spec<'stack'>('cmdb_exporter_state_bytes', registry)),
    stateLastWrite: new Gauge(spec<'stack'>('cmdb_exporter_state_last_write_timestamp_seconds', registry)),
  };
}
