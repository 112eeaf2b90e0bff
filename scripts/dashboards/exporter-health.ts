/** Exporter health: polls, CMDB requests, rate budget, series and the Node.js process. */
import { m, mj, row, stateTimeline, timeseries, valueMappings } from './builders.js';
import type { TargetSpec } from './builders.js';
import { Board, commonVariables, dashboard } from './layout.js';
import { table } from './tables.js';
import { EXPORTER_HEALTH_UID } from './uids.js';
import { MIXIN_DEFAULTS, type MixinConfig } from '../mixin.js';
import type { Dashboard } from './types.js';

const RI = '[$__rate_interval]';
const rate = (metric: string, by: string, extra?: string) => `sum by (${by}) (rate(${m(metric, extra)}${RI}))`;
const increase = (metric: string, by: string) => `sum by (${by}) (increase(${m(metric)}${RI}))`;
const quantile = (q: number, metric: string, by: string) =>
  `histogram_quantile(${q}, sum by (${by}, le) (rate(${m(`${metric}_bucket`)}${RI})))`;
const LOG = "the exporter's log and its landing page (/)";

interface Spec {
  readonly title: string;
  readonly description: string;
  readonly queries: readonly TargetSpec[];
  readonly unit?: string;
  readonly bars?: boolean;
  readonly w?: number;
}

function add(board: Board, { w, ...spec }: Spec): void {
  board.add(timeseries(spec), w ?? 12, 8);
}

function endpoints(board: Board): void {
  board.add(row('CMDB endpoints', 'Result and age of the newest poll of each CMDB endpoint.'), 24, 1);
  board.add(
    stateTimeline({
      title: 'Endpoint up',
      description: `Whether the newest poll of each endpoint succeeded. Red: ${LOG} name the error (HTTP status, timeout, invalid body); check the CMDB's availability and the exporter's credentials.`,
      queries: [{ expr: `max by (stack, endpoint) (${m('cmdb_endpoint_up')})`, legend: '{{stack}} {{endpoint}}' }],
      mappings: valueMappings({ 0: ['down', 'red'], 1: ['up', 'green'] }),
      steps: [['text', null]],
    }),
    24,
    8,
  );
  add(board, {
    title: 'Time since last successful poll',
    description: `Age of the newest successful poll per endpoint. Rising without reset: the endpoint keeps failing, see ${LOG}; its series disappear after 3 poll intervals.`,
    queries: [{ expr: `max by (stack, endpoint) (time() - ${m('cmdb_endpoint_last_success_timestamp_seconds')})`, legend: '{{stack}} {{endpoint}}' }],
    unit: 's',
  });
  add(board, {
    title: 'Age in poll intervals',
    description: 'Age of the newest successful poll divided by the poll interval. Above 3 the data is stale (CmdbEndpointDataStale): see the endpoint up panel and the exporter log.',
    queries: [
      {
        expr: `max by (stack, endpoint) (\n  (time() - ${m('cmdb_endpoint_last_success_timestamp_seconds')})\n  / ${m('cmdb_endpoint_poll_interval_seconds')}\n)`,
        legend: '{{stack}} {{endpoint}}',
      },
    ],
    // A multiple of the poll interval, not a duration.
    unit: 'none',
  });
}

function requests(board: Board): void {
  board.add(row('CMDB requests', 'HTTP requests the exporter makes to the CMDB.'), 24, 1);
  add(board, {
    title: 'Requests by outcome',
    description: 'Requests per second by outcome (HTTP status, timeout, network, invalid_body, too_large …). Anything but 200: the exporter log names the endpoint and error; 401/403 point at credentials, 429 at the rate budget.',
    queries: [{ expr: rate('cmdb_endpoint_requests_total', 'stack, outcome'), legend: '{{stack}} {{outcome}}' }],
    unit: 'reqps',
  });
  add(board, {
    title: 'Requests by endpoint',
    description: 'Requests per second by endpoint. One endpoint far above the others: check its poll interval and the page size in the exporter configuration.',
    queries: [{ expr: rate('cmdb_endpoint_requests_total', 'stack, endpoint'), legend: '{{stack}} {{endpoint}}' }],
    unit: 'reqps',
  });
  add(board, {
    title: 'Request latency',
    description: 'Median and 95th percentile latency of CMDB requests by endpoint. High latency: the CMDB is slow or overloaded; lengthen poll intervals or raise timeoutSeconds if requests time out.',
    queries: [
      { expr: quantile(0.5, 'cmdb_endpoint_request_duration_seconds', 'stack, endpoint'), legend: '{{stack}} {{endpoint}} p50' },
      { expr: quantile(0.95, 'cmdb_endpoint_request_duration_seconds', 'stack, endpoint'), legend: '{{stack}} {{endpoint}} p95' },
    ],
    unit: 's',
  });
  add(board, {
    title: 'Token requests',
    description: 'Token fetches by outcome. rejected: the client id or secret is wrong or revoked (CmdbTokenRejected); error: the token endpoint failed, see the exporter log. Frequent successes: the token is not reused; check the log for 401s.',
    queries: [{ expr: increase('cmdb_token_requests_total', 'stack, outcome'), legend: '{{stack}} {{outcome}}' }],
    unit: 'short',
    bars: true,
  });
}

function budget(board: Board): void {
  board.add(row('Rate budget', 'The client-side request budget (rateLimitPerMinute) and waiting for it.'), 24, 1);
  add(board, {
    title: 'Budget use',
    description: 'Requests per minute as a share of the configured budget. Above 90% (CmdbRateBudgetNearlyExhausted): lengthen poll intervals or raise rateLimitPerMinute if the CMDB allows it (the service allows 60 a minute).',
    queries: [
      {
        expr: `${rate('cmdb_endpoint_requests_total', 'stack')} * 60\n/ max by (stack) (${m('cmdb_rate_limit_requests_per_minute')})`,
        legend: '{{stack}}',
      },
    ],
    unit: 'percentunit',
    w: 8,
  });
  add(board, {
    title: 'Requests per minute and budget',
    description: 'Requests per minute against the budget. The request line at the budget line: polls queue up; see Budget use.',
    queries: [
      { expr: `${rate('cmdb_endpoint_requests_total', 'stack')} * 60`, legend: '{{stack}} requests' },
      { expr: `max by (stack) (${m('cmdb_rate_limit_requests_per_minute')})`, legend: '{{stack}} budget' },
    ],
    unit: 'short',
    w: 8,
  });
  add(board, {
    title: 'Waiting for the budget',
    description: 'Seconds per second that requests spent waiting for the budget or a Retry-After. Steadily above 0: data lags behind; lengthen poll intervals.',
    queries: [{ expr: rate('cmdb_rate_limit_wait_seconds_total', 'stack'), legend: '{{stack}}' }],
    unit: 's',
    w: 8,
  });
}

function polls(board: Board): void {
  board.add(row('Polls and series', 'Scheduler polls per endpoint group and the series they produce.'), 24, 1);
  add(board, {
    title: 'Poll duration',
    description: '95th percentile duration of one poll per group, all requests included. Close to the poll interval: polls get skipped; lengthen the interval or check request latency.',
    queries: [{ expr: quantile(0.95, 'cmdb_poll_duration_seconds', 'stack, group'), legend: '{{stack}} {{group}} p95' }],
    unit: 's',
    w: 8,
  });
  add(board, {
    title: 'Skipped polls',
    description: 'Polls not started because the previous poll of the group still ran. Any: the poll interval is shorter than a poll takes; lengthen it.',
    queries: [{ expr: increase('cmdb_poll_skipped_total', 'stack, group'), legend: '{{stack}} {{group}}' }],
    unit: 'short',
    bars: true,
    w: 8,
  });
  add(board, {
    title: 'Truncated paged reads',
    description: 'Paged reads stopped at paging.maxPages before the last page. Any: connectors or Actions are missing; raise maxPages or the page size.',
    queries: [{ expr: increase('cmdb_pages_truncated_total', 'stack, endpoint'), legend: '{{stack}} {{endpoint}}' }],
    unit: 'short',
    bars: true,
    w: 8,
  });
  add(board, {
    title: 'Bytes read from the CMDB',
    description:
      'Response bytes read per endpoint. The connector run history is the largest: between full scans (connectorFullScanInterval) only its newest runs are read, so its rate should be a small fraction of a full scan. High all the time: see Connector history scans.',
    queries: [{ expr: rate('cmdb_endpoint_response_bytes_total', 'stack, endpoint'), legend: '{{stack}} {{endpoint}}' }],
    unit: 'Bps',
  });
  add(board, {
    title: 'Connector history scans',
    description:
      'Reads of the connector run history: full (every page) and incremental (newest runs only, sort=_time,desc). Sort fallbacks: the CMDB did not sort by _time, so those polls read every page; see the warning in the exporter log.',
    queries: [
      { expr: increase('cmdb_connector_scans_total', 'stack, kind'), legend: '{{stack}} {{kind}}' },
      { expr: increase('cmdb_connector_sort_fallbacks_total', 'stack'), legend: '{{stack}} sort fallback' },
    ],
    unit: 'short',
    bars: true,
  });
  add(board, {
    title: 'Exported series',
    description: 'Series exported per stack from CMDB data. Close to maxSeries: series will be dropped; raise the cap or track fewer records.',
    queries: [{ expr: `max by (stack) (${m('cmdb_series')})`, legend: '{{stack}}' }],
    unit: 'short',
  });
  add(board, {
    title: 'Dropped and duplicate series',
    description: 'Series dropped at the series cap (CmdbSeriesDropped) and duplicates removed. Drops: raise maxSeries; duplicates: the CMDB sent the same entity twice, see the exporter log.',
    queries: [
      { expr: increase('cmdb_series_dropped_total', 'stack'), legend: '{{stack}} dropped' },
      { expr: increase('cmdb_duplicate_series_total', 'stack'), legend: '{{stack}} duplicate' },
    ],
    unit: 'short',
    bars: true,
  });
}

function processSection(board: Board): void {
  board.add(row('Process', 'The exporter process (Node.js).'), 24, 1);
  add(board, {
    title: 'Memory',
    description: 'Resident memory and V8 heap of the exporter. Growing without bound: a leak or too many series; check Exported series and report it with the exporter version.',
    queries: [
      { expr: mj('process_resident_memory_bytes'), legend: '{{instance}} resident' },
      { expr: mj('nodejs_heap_size_used_bytes'), legend: '{{instance}} heap used' },
    ],
    unit: 'bytes',
    w: 8,
  });
  add(board, {
    title: 'Event-loop lag',
    description: 'Event-loop lag of the exporter. Above 100 ms: scrapes and polls are delayed; check CPU use and the number of series.',
    queries: [
      { expr: mj('nodejs_eventloop_lag_seconds'), legend: '{{instance}} lag' },
      { expr: mj('nodejs_eventloop_lag_p99_seconds'), legend: '{{instance}} p99' },
    ],
    unit: 's',
    w: 8,
  });
  add(board, {
    title: 'CPU',
    description: 'CPU seconds per second used by the exporter. Steadily near 1: one core is saturated; look at series count and poll intervals.',
    queries: [{ expr: `rate(${mj('process_cpu_seconds_total')}${RI})`, legend: '{{instance}}' }],
    unit: 'percentunit',
    w: 8,
  });
  add(board, {
    title: 'Stacks per replica',
    description: 'Stacks each exporter process polls, with its shard. Sharded replicas (docs/scaling.md) should each hold about total / N; a replica at 0 while others hold many: check that every replica has the same --total-shards.',
    queries: [
      {
        expr: `max by (instance, shard, total) (\n  ${mj('cmdb_exporter_stacks')}\n  * on (job, instance) group_left (shard, total) ${mj('cmdb_exporter_shard')}\n)`,
        legend: '{{instance}} shard {{shard}} of {{total}}',
      },
    ],
    unit: 'short',
    w: 24,
  });
  board.add(
    table({
      title: 'Exporter instances',
      description: "Version, scrape status, uptime and last configuration reload of each exporter. Up 0: Prometheus cannot scrape it (CmdbExporterDown). Reload 0: the newest configuration was rejected, see the exporter log.",
      labels: ['instance', 'version', 'node_version'],
      headers: { instance: 'Instance', version: 'Version', node_version: 'Node.js' },
      columns: [
        { expr: `max by (instance, version, node_version) (${mj('cmdb_exporter_build_info')})` },
        { expr: `max by (instance) (${mj('up')})`, name: 'Up', props: { mappings: valueMappings({ 0: ['down', 'red'], 1: ['up', 'green'] }) } },
        { expr: `max by (instance) (time() - ${mj('process_start_time_seconds')})`, name: 'Uptime', props: { unit: 's' } },
        { expr: `max by (instance) (${mj('cmdb_exporter_stacks')})`, name: 'Stacks' },
        {
          expr: `max by (instance) (${mj('cmdb_config_last_reload_successful')})`,
          name: 'Last reload',
          props: { mappings: valueMappings({ 0: ['rejected', 'red'], 1: ['ok', 'green'] }) },
        },
      ],
    }),
    24,
    6,
  );
}

export function exporterHealthDashboard(mixin: MixinConfig = MIXIN_DEFAULTS): Dashboard {
  const board = new Board();
  endpoints(board);
  requests(board);
  budget(board);
  polls(board);
  processSection(board);
  return dashboard({
    uid: EXPORTER_HEALTH_UID,
    title: 'CMDB exporter health',
    description: 'Health of cmdb-exporter: CMDB endpoints, requests, rate budget, polls, series and the process.',
    variables: [...commonVariables(mixin)],
    panels: board.panels(),
  });
}
