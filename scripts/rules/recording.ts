/**
 * Recording rules, named level:metric:operations (Prometheus "Recording rules" naming): `level` the
 * labels the result keeps besides job and instance, `metric` the source metric (without _total),
 * `operations` what was applied, newest first. They aggregate with `without` so that target labels
 * added by the scrape configuration survive.
 */
import { counted, enclose, selector } from './model.js';
import type { RecordingRule, RuleGroup, Thresholds } from './model.js';

/** The recorded series' names, one place for the rules, alerts and tests that read them. */
export const RECORDS = {
  requestRate: 'stack:cmdb_endpoint_requests:rate5m',
  budgetRatio: 'stack:cmdb_endpoint_requests_per_rate_limit:ratio_rate5m',
  successAge: 'stack_endpoint:cmdb_endpoint_last_success_timestamp_seconds:age',
  connectorRunTime: 'stack_connector_profile:cmdb_connector_last_run_timestamp_seconds:end_or_start',
  healthCount: 'stack_health:cmdb_connector_health:sum',
} as const;

export function recordingRules(t: Thresholds): RuleGroup<RecordingRule> {
  const s = (metric: string, extra?: string) => selector(t, metric, extra);
  return {
    name: 'cmdb-exporter.rules',
    rules: [
      {
        // Requests actually made per second, all endpoints of a stack: what the budget limits. The
        // requests counted over the last 5 minutes of scrapes (counted(): the same on Prometheus 2
        // and 3, and one whole poll period for polls 5 minutes apart, where rate() would see 0 or
        // 1.25 of one), per second.
        record: RECORDS.requestRate,
        expr: `${enclose(counted(t, 'cmdb_endpoint_requests_total', '', '5m'), 'sum without (endpoint, outcome)')}\n/ 300`,
      },
      {
        // The same per minute, against the per-minute budget.
        record: RECORDS.budgetRatio,
        expr: `${s(RECORDS.requestRate)} * 60\n/\n${s('cmdb_rate_limit_requests_per_minute')}`,
      },
      {
        // Age of each endpoint's newest successful poll, compared with its poll interval.
        record: RECORDS.successAge,
        expr: `time() - ${s('cmdb_endpoint_last_success_timestamp_seconds')}`,
      },
      {
        // When the newest run of each connector ended, or started while it has no end time yet.
        record: RECORDS.connectorRunTime,
        expr: `${s('cmdb_connector_last_run_end_timestamp_seconds')} > 0\nor\n${s('cmdb_connector_last_run_start_timestamp_seconds')} > 0`,
      },
      {
        // Connectors per normalised health; all four states are always exported, so zeros stay.
        record: RECORDS.healthCount,
        expr: `sum without (connector, profile) (${s('cmdb_connector_health')})`,
      },
    ],
  };
}
