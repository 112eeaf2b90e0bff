/**
 * The metric catalogue: every family the exporter serves, with its type, labels and HELP text.
 * Metric names come from here only, and are a contract: dashboards and alerts use them, so a name
 * does not change once released. docs/metrics.md is generated from this file
 * (`npm run docs:metrics`) and checked for drift by a test.
 *
 * origin:
 * - `snapshot`: built from CMDB data (or from poll status) by the snapshot store and rendered once
 *   per change; always carries `stack` as its first label.
 * - `registry`: a prom-client instrument (counters, histograms) rendered by the registry.
 */
import { docPathOf, methodOf, type DataEndpoint } from '../api/endpoints.js';

export type MetricType = 'gauge' | 'counter' | 'histogram';

export interface MetricFamily {
  readonly name: string;
  readonly type: MetricType;
  readonly labels: readonly string[];
  readonly help: string;
  readonly origin: 'snapshot' | 'registry';
  /** The endpoint whose poll produces it (snapshot families from CMDB data). */
  readonly endpoint?: DataEndpoint;
  /** A state set: one series per known state, 1 for the current state and 0 for the others. */
  readonly stateSet?: boolean;
  /** Served only under this condition (otherwise always). */
  readonly only?: string;
}

/** The families of --storage.path: served only when the exporter keeps state. */
const STORAGE = 'with --storage.path';

/** HELP names the field and the path it comes from (the path from the endpoint's descriptor). */
function cmdb(
  endpoint: DataEndpoint,
  list: ReadonlyArray<[name: string, type: MetricType, labels: string[], text: string, field: string, stateSet?: boolean]>,
): MetricFamily[] {
  return list.map(([name, type, labels, text, field, stateSet]) => ({
    name,
    type,
    labels: ['stack', ...labels],
    help: `${text} (${field} of ${methodOf(endpoint)} ${docPathOf(endpoint)}, polled).`,
    origin: 'snapshot' as const,
    endpoint,
    ...(stateSet ? { stateSet: true } : {}),
  }));
}

const CK = ['connector', 'profile'];

export const CATALOGUE: readonly MetricFamily[] = [
  // ---- inventory ----
  ...cmdb('metrics_data', [
    ['cmdb_assets', 'gauge', [], 'Number of assets in the inventory', 'assetCount'],
    ['cmdb_users', 'gauge', [], 'Number of users in the inventory', 'userCount'],
    ['cmdb_assets_avg_30d', 'gauge', [], 'Average number of assets over the last 30 days', 'avg30DaysAssetCount'],
    ['cmdb_users_avg_30d', 'gauge', [], 'Average number of users over the last 30 days', 'avg30DaysUserCount'],
  ]),
  // ---- license ----
  ...cmdb('license', [
    ['cmdb_license_info', 'gauge', ['license_type', 'customer_name'], 'License type and customer, value 1', 'licenseType, customerName'],
    ['cmdb_license_expiry_timestamp_seconds', 'gauge', [], 'License expiry as unix time, expiry day at 00:00:00 UTC', 'expireDate'],
    ['cmdb_license_days_until_expiry', 'gauge', [], 'Days until the license expires, computed at scrape time; negative once expired', 'expireDate'],
  ]),
  // ---- connectors ----
  ...cmdb('connector', [
    ['cmdb_connector_info', 'gauge', [...CK, 'display_name', 'platform', 'version'], 'Connector description from its newest run, value 1', 'bridge_name, profile, display_name, platform, version'],
    ['cmdb_connector_status', 'gauge', [...CK, 'status'], 'Status of the newest run exactly as sent; one series per status seen in the last hour (at most 8), 1 for the current one', 'status', true],
    ['cmdb_connector_health', 'gauge', [...CK, 'health'], 'Normalised status of the newest run (ok, warning, error, unknown), 1 for the current one', 'status', true],
    ['cmdb_connector_last_run_timestamp_seconds', 'gauge', CK, 'When the newest run was written, as unix time: the freshness of the connector', '_time, else _utc, else end_time, else start_time'],
    ['cmdb_connector_last_run_start_timestamp_seconds', 'gauge', CK, 'Start of the newest run as unix time', 'start_time'],
    ['cmdb_connector_last_run_end_timestamp_seconds', 'gauge', CK, 'End of the newest run as unix time', 'end_time'],
    ['cmdb_connector_last_run_duration_seconds', 'gauge', CK, 'Duration of the newest run in seconds', 'duration_minutes'],
    ['cmdb_connector_input_records', 'gauge', CK, 'Records read by the newest run', 'input_records'],
    ['cmdb_connector_output_records', 'gauge', CK, 'Records written by the newest run', 'output_records'],
    ['cmdb_connector_fields', 'gauge', [...CK, 'kind'], 'Number of fields in each field list of the newest run (kind: expected, raw, actual_input, output)', 'expected_input_fields, raw_data_fields, actual_input_fields, output_fields'],
    ['cmdb_connector_missing_fields', 'gauge', CK, 'Expected input fields that the newest run did not receive', 'expected_input_fields, actual_input_fields'],
    ['cmdb_connector_event_messages', 'gauge', [...CK, 'level'], 'Event messages of the newest run by level', 'event_messages'],
    // Rows with platform ML-ENGINE: the internal asset and user mergers, not connectors.
    ['cmdb_merger_last_run_timestamp_seconds', 'gauge', ['merger'], 'When the newest run of the internal merger was written, as unix time', 'platform ML-ENGINE rows: _time, else _utc, else end_time, else start_time'],
    ['cmdb_merger_last_run_end_timestamp_seconds', 'gauge', ['merger'], 'End of the newest run of the internal merger as unix time', 'platform ML-ENGINE rows: end_time'],
    ['cmdb_merger_status', 'gauge', ['merger', 'status'], 'Status of the newest merger run exactly as sent, 1 for the current one', 'platform ML-ENGINE rows: status', true],
    ['cmdb_merger_health', 'gauge', ['merger', 'health'], 'Normalised status of the newest merger run (ok, warning, error, unknown), 1 for the current one', 'platform ML-ENGINE rows: status', true],
    ['cmdb_merger_output_records', 'gauge', ['merger'], 'Records written by the newest merger run', 'platform ML-ENGINE rows: output_records'],
    ['cmdb_data_as_of_timestamp_seconds', 'gauge', [], 'When the CMDB\'s data was last rebuilt, as unix time: the newest merger run that did not fail (status Success or Warning in any case); absent while every merger\'s newest run failed', 'platform ML-ENGINE rows: _time, else _utc, else end_time, else start_time'],
    // Rows with platform action: outbound Scheduled Action runs, not connectors.
    ['cmdb_action_history_last_run_timestamp_seconds', 'gauge', ['action_type', 'action_name'], 'When the newest run of the Scheduled Action was written, as unix time', 'platform action rows: _time, else _utc, else end_time, else start_time'],
    ['cmdb_action_history_status', 'gauge', ['action_type', 'action_name', 'status'], 'Status of the newest Scheduled Action run exactly as sent, 1 for the current one', 'platform action rows: status', true],
    ['cmdb_action_history_health', 'gauge', ['action_type', 'action_name', 'health'], 'Normalised status of the newest Scheduled Action run (ok, warning, error, unknown), 1 for the current one', 'platform action rows: status', true],
    ['cmdb_action_history_output_records', 'gauge', ['action_type', 'action_name'], 'Records sent by the newest Scheduled Action run', 'platform action rows: output_records'],
  ]),
  // ---- data ingestion ----
  ...cmdb('data_ingestion', [
    ['cmdb_ingestion_runs', 'gauge', ['status'], 'Ingestion runs in the list by status', 'data_ingestion_runs[].status'],
    ['cmdb_ingestion_run_in_progress', 'gauge', [], '1 while any ingestion run has status running or queued (any case)', 'data_ingestion_runs[].status'],
    ['cmdb_ingestion_last_run_start_timestamp_seconds', 'gauge', [], 'Start of the newest ingestion run as unix time', 'start_date'],
    ['cmdb_ingestion_last_run_status', 'gauge', ['status'], 'Status of the newest ingestion run, 1 for the current one', 'status', true],
    ['cmdb_ingestion_last_success_timestamp_seconds', 'gauge', [], 'End of the newest successful ingestion run as unix time', 'end_date'],
    ['cmdb_ingestion_last_run_duration_seconds', 'gauge', [], 'Duration of the newest finished ingestion run in seconds', 'start_date, end_date'],
  ]),
  ...cmdb('data_ingestion_next', [
    ['cmdb_ingestion_next_run_timestamp_seconds', 'gauge', [], 'Next scheduled ingestion run as unix time; absent while the service reports a text instead of a time', 'next_run_at'],
    ['cmdb_ingestion_schedule_info', 'gauge', ['schedule', 'schedule_type'], 'Ingestion schedule, value 1', 'schedule_interval_value, schedule_interval_type'],
  ]),
  ...cmdb('data_ingestion_detail', [
    ['cmdb_ingestion_task_status', 'gauge', ['task_id', 'status'], 'Status of each task of the newest ingestion run, 1 for the current one', 'task_list[].status', true],
    ['cmdb_ingestion_task_duration_seconds', 'gauge', ['task_id'], 'Duration of each finished task of the newest ingestion run in seconds', 'task_list[].start_date, end_date'],
    ['cmdb_ingestion_task_info', 'gauge', ['task_id', 'operator', 'image'], 'Operator and image of each task of the newest ingestion run, value 1', 'task_list[].operator, docker_image'],
  ]),
  // ---- Actions ----
  ...cmdb('actions', [
    ['cmdb_action_info', 'gauge', ['action_id', 'action_name', 'action_type', 'action_group', 'schedule_type'], 'Action description, value 1', 'actionId, actionName, actionType, actionGroup, scheduleType'],
    ['cmdb_action_status', 'gauge', ['action_id', 'status'], 'Status of the Action, 1 for the current one', 'status', true],
    ['cmdb_action_last_run_timestamp_seconds', 'gauge', ['action_id'], 'Last run of the Action as unix time', 'lastRunAt'],
    ['cmdb_action_next_run_timestamp_seconds', 'gauge', ['action_id'], 'Next run of the Action as unix time; absent when the service reports a text such as "After Next Data Ingestion"', 'nextRunAt'],
  ]),
  ...cmdb('action_jobs', [
    ['cmdb_action_jobs', 'gauge', ['action_id', 'status'], 'Jobs of the Action by status', 'action_status'],
    ['cmdb_action_last_job_timestamp_seconds', 'gauge', ['action_id'], 'Run date of the newest job of the Action as unix time', 'action_run_date'],
    ['cmdb_action_last_job_status', 'gauge', ['action_id', 'status'], 'Status of the newest job of the Action, 1 for the current one', 'action_status', true],
    ['cmdb_action_last_job_results', 'gauge', ['action_id'], 'Number of results of the newest job of the Action', 'action_result_number'],
  ]),
  // ---- change history (asset_change and user_change share the families) ----
  ...cmdb('asset_change', [
    ['cmdb_record_changes', 'gauge', ['type', 'id', 'field'], 'Change-log entries per field of a tracked asset or user', 'change entries'],
    ['cmdb_record_last_change_timestamp_seconds', 'gauge', ['type', 'id', 'field'], 'Newest change per field of a tracked asset or user as unix time', 'changeTimeEpoch'],
  ]),
  // ---- saved inventory queries (counted once per rebuild) ----
  ...cmdb('data_metadata', [['cmdb_query_fields', 'gauge', ['table'], 'Queryable fields in the field metadata of the table, read before its saved queries run', 'metadata[]']]),
  ...queryFamilies([
    ['cmdb_query_records', 'Records the saved query counts (totalRecords of POST /CMDB/v2/data/cmdb, asked once per rebuild); absent while the query is refused or its last run failed'],
    ['cmdb_query_data_as_of_timestamp_seconds', 'When the data the count of the saved query was taken from was rebuilt, as unix time: the newest merger run of its table that had not failed when the count was taken; absent with the count, or when no merger run was known'],
    ['cmdb_query_last_run_success', '1 if the last run of the saved query counted its records, 0 if it was refused or its request failed'],
    ['cmdb_query_refused', '1 while the saved query is refused, not sent, because it does not fit the stack\'s field metadata (an unknown field, a wrong type, a quoted number, an operator its type does not take); the log and the status page say why'],
    ['cmdb_query_last_run_timestamp_seconds', 'When the saved query was last run or refused, as unix time'],
    ['cmdb_query_previous_records', 'The count of the saved query at the rebuild before the one cmdb_query_records belongs to (its change across rebuilds is the difference); absent with the count, and until two rebuilds were counted since the exporter started'],
    ['cmdb_query_alert_rise_ratio', 'The alertRiseRatio the saved query opted in to CmdbQueryCountRose with: the alert fires when the count rises by more than this share between two rebuilds; absent for queries that did not opt in'],
  ]),
  // ---- the exporter itself ----
  self('cmdb_endpoint_up', 'gauge', ['stack', 'endpoint'], '1 if the newest poll of the CMDB endpoint succeeded, 0 if it failed or none has finished yet.', 'snapshot'),
  self('cmdb_endpoint_forbidden', 'gauge', ['stack', 'endpoint'], '1 while the newest poll of the CMDB endpoint was refused with 403 (the token lacks the permission), else 0.', 'snapshot'),
  self('cmdb_endpoint_last_success_timestamp_seconds', 'gauge', ['stack', 'endpoint'], 'When the newest successful poll of the CMDB endpoint finished, as unix time.', 'snapshot'),
  self('cmdb_endpoint_poll_interval_seconds', 'gauge', ['stack', 'endpoint'], 'Configured poll interval of the CMDB endpoint in seconds (for staleness alerts).', 'snapshot'),
  self('cmdb_series', 'gauge', ['stack'], 'Series currently exported for the stack from CMDB data.', 'snapshot'),
  self('cmdb_endpoint_request_duration_seconds', 'histogram', ['stack', 'endpoint'], 'Latency of HTTP requests to the CMDB, per attempt.', 'registry'),
  self('cmdb_endpoint_requests_total', 'counter', ['stack', 'endpoint', 'outcome'], 'HTTP requests to the CMDB by outcome: the HTTP status code (429 when the CMDB refused it for its rate limit), or timeout, network, invalid_body, too_large, redirect_refused.', 'registry'),
  self('cmdb_token_requests_total', 'counter', ['stack', 'outcome'], 'Token fetches from the access_token endpoint by outcome (success, rejected, error).', 'registry'),
  self('cmdb_poll_duration_seconds', 'histogram', ['stack', 'group'], 'Duration of one poll of an endpoint group, all requests included.', 'registry'),
  self('cmdb_poll_skipped_total', 'counter', ['stack', 'group'], 'Polls not started because the previous poll of the same group was still running.', 'registry'),
  self('cmdb_rate_limit_requests_per_minute', 'gauge', ['stack'], 'Configured client-side request budget per minute (rateLimitPerMinute).', 'registry'),
  self('cmdb_action_jobs_backlog', 'gauge', ['stack'], 'Listed Actions whose jobs are due but not fetched yet: job fetches are paced at actionJobsPerMinute, and what does not fit in a poll waits for the next.', 'registry'),
  self('cmdb_rate_limit_wait_seconds_total', 'counter', ['stack'], 'Time requests spent waiting for the client-side rate budget or a server Retry-After.', 'registry'),
  self('cmdb_rate_limit_paused_until_timestamp_seconds', 'gauge', ['stack'], 'When the pause the CMDB put on the whole stack ends (a Retry-After on a 429, 502, 503 or 504, or a 429 without one: a pause doubling from retries.minDelaySeconds), as unix time (at most retries.maxRetryAfterSeconds ahead; a reload ends it); no request of the stack leaves before. 0 before any pause and after a reload.', 'registry'),
  self('cmdb_series_dropped_total', 'counter', ['stack'], 'Series dropped because the stack exceeded its series cap (maxSeries).', 'registry'),
  self('cmdb_duplicate_series_total', 'counter', ['stack'], 'Series with a label set already present in the same snapshot; the first one was kept.', 'registry'),
  self('cmdb_endpoint_response_bytes_total', 'counter', ['stack', 'endpoint'], 'Bytes of CMDB response bodies read, per endpoint, as they came over the wire (compressed when the CMDB compressed them; what incremental connector polls save shows here).', 'registry'),
  self('cmdb_connector_scans_total', 'counter', ['stack', 'kind'], 'Reads of the connector run history by kind: full (every page) or incremental (newest runs only, sort=_time,desc).', 'registry'),
  self('cmdb_connector_sort_fallbacks_total', 'counter', ['stack'], 'Incremental connector reads that met a page not sorted by _time descending and fell back to a full scan.', 'registry'),
  self('cmdb_connector_scan_in_progress', 'gauge', ['stack'], '1 while a full scan of the connector run history is running (it may outlast its poll interval; the connector endpoint serves the last scan meanwhile), else 0.', 'registry'),
  self('cmdb_connector_scan_pages_read', 'gauge', ['stack'], 'Pages the running full scan of the connector run history has read, or the last scan when none runs.', 'registry'),
  self('cmdb_connector_scan_pages_expected', 'gauge', ['stack'], 'Pages the running (or last) full scan of the connector run history expects in all, from the service\'s totalPages at its page size; 0 until known.', 'registry'),
  self('cmdb_connector_scan_bytes', 'gauge', ['stack'], 'Response bytes the running (or last) full scan of the connector run history has read.', 'registry'),
  self('cmdb_connector_scan_start_timestamp_seconds', 'gauge', ['stack'], 'When the running (or last) full scan of the connector run history started, as unix time: time() minus it is its elapsed time while it runs.', 'registry'),
  self('cmdb_connector_scan_page_size', 'gauge', ['stack'], 'Rows per page full scans of the connector run history ask for: paging.connectorPageSize, halved after a page timed out, doubled back after a scan of fast pages.', 'registry'),
  self('cmdb_connector_incremental_off_until_timestamp_seconds', 'gauge', ['stack'], 'Until when incremental reads of the connector run history are off (the service answered unsorted pages twice in a row), as unix time; 0 while they are on.', 'registry'),
  self('cmdb_pages_truncated_total', 'counter', ['stack', 'endpoint'], 'Paged reads stopped at the page cap (paging.maxPages) before the last page.', 'registry'),
  self('cmdb_config_last_reload_successful', 'gauge', [], '1 if the last configuration reload succeeded (or none was attempted), 0 if it was rejected.', 'registry'),
  self('cmdb_config_last_reload_success_timestamp_seconds', 'gauge', [], 'When the configuration was last loaded successfully, as unix time.', 'registry'),
  self('cmdb_exporter_build_info', 'gauge', ['version', 'node_version'], 'Build information of cmdb-exporter, value 1.', 'registry'),
  self('cmdb_exporter_shard', 'gauge', ['shard', 'total'], 'This replica\'s shard and the number of shards sharing the configuration\'s stacks (0 and 1 when not sharded), value 1.', 'registry'),
  self('cmdb_exporter_request_demand_ratio', 'gauge', ['stack'], 'Requests an hour the stack\'s poll plan asks of the CMDB (its intervals, paging and tracked names, and the connector pages, Actions and fan-out fetches it last saw; retries aside) divided by its budget, rateLimitPerMinute × 60. Above 1 the polls cannot all run at their intervals: see docs/scaling.md.', 'registry'),
  self('cmdb_exporter_stacks', 'gauge', [], 'Stacks this replica polls (its share of the configuration when sharded).', 'registry'),
  self('cmdb_endpoint_restored_age_seconds', 'gauge', ['stack', 'endpoint'], 'Present while the CMDB endpoint\'s series are served from the state kept across a restart (--storage.path): how old they are, seconds since the poll that made them; gone at the endpoint\'s first successful poll.', 'registry', STORAGE),
  self('cmdb_exporter_state_writes_total', 'counter', ['stack', 'result'], 'Writes of the stack\'s state to --storage.path by result (success, error; an error also counts a failed refresh of the folder\'s lock); a failure is logged once, tried again, and never stops a poll.', 'registry', STORAGE),
  self('cmdb_exporter_state_bytes', 'gauge', ['stack'], 'Size of the stack\'s state file in --storage.path (gzip), at its last successful write.', 'registry', STORAGE),
  self('cmdb_exporter_state_last_write_timestamp_seconds', 'gauge', ['stack'], 'When the stack\'s state was last written to --storage.path, as unix time.', 'registry', STORAGE),
  self('cmdb_exporter_http_requests_refused_total', 'counter', ['reason'], 'Requests and connections the exporter\'s own HTTP server refused, by reason: unauthorized (401), auth_busy and max_requests (503), max_connections (dropped), tls_handshake (failed or refused TLS handshake).', 'registry'),
];

/** The families of the saved queries: one series per configured query, label `query`. */
function queryFamilies(list: ReadonlyArray<[name: string, help: string]>): MetricFamily[] {
  return list.map(([name, help]) => ({ name, type: 'gauge' as const, labels: ['stack', 'query'], help: `${help}.`, origin: 'snapshot' as const, endpoint: 'data_query' as const }));
}

function self(name: string, type: MetricType, labels: string[], help: string, origin: 'snapshot' | 'registry', only?: string): MetricFamily {
  return { name, type, labels, help, origin, ...(only === undefined ? {} : { only }) };
}

export const FAMILIES: ReadonlyMap<string, MetricFamily> = new Map(CATALOGUE.map((f) => [f.name, f]));

export function family(name: string): MetricFamily {
  const f = FAMILIES.get(name);
  if (!f) throw new Error(`metric ${name} is not in the catalogue`);
  return f;
}
