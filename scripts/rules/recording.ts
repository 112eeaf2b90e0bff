/**
 * Recording rules, named level:metric:operations with the `cmdb:` prefix. They aggregate with
 * `without` so that target labels added by the scrape configuration survive.
 */
import { selector } from './model.js';
import type { RecordingRule, RuleGroup, Thresholds } from './model.js';

export function recordingRules(t: Thresholds): RuleGroup<RecordingRule> {
  const s = (metric: string, extra?: string) => selector(t, metric, extra);
  return {
    name: 'cmdb-exporter.rules',
    rules: [
      {
        // Requests actually made per minute, all endpoints of a stack: what the budget limits.
        record: 'cmdb:endpoint_requests_per_minute:rate5m',
        expr: `sum without (endpoint, outcome) (rate(${s('cmdb_endpoint_requests_total')}[5m])) * 60`,
      },
      {
        record: 'cmdb:rate_budget_usage:ratio_rate5m',
        expr: `${s('cmdb:endpoint_requests_per_minute:rate5m')}\n/\n${s('cmdb_rate_limit_requests_per_minute')}`,
      },
      {
        // Age of each endpoint's newest successful poll, compared with its poll interval.
        record: 'cmdb:endpoint_last_success_age:seconds',
        expr: `time() - ${s('cmdb_endpoint_last_success_timestamp_seconds')}`,
      },
      {
        // When the newest run of each connector ended, or started while it has no end time yet.
        record: 'cmdb:connector_last_run_timestamp_seconds:end_or_start',
        expr: `${s('cmdb_connector_last_run_end_timestamp_seconds')} > 0\nor\n${s('cmdb_connector_last_run_start_timestamp_seconds')} > 0`,
      },
      {
        // Connectors per normalised health; all four states are always exported, so zeros stay.
        record: 'cmdb:connector_health:count',
        expr: `sum without (connector, profile) (${s('cmdb_connector_health')})`,
      },
    ],
  };
}
