/** Alerts on connectors (data sources), one per (connector, profile) from its newest run. */
import { CONNECTOR, STACK, alertFactory, humanSeconds, selector } from './model.js';
import type { AlertRule, RuleGroup, Thresholds } from './model.js';

export function connectorAlerts(t: Thresholds): RuleGroup<AlertRule> {
  const alert = alertFactory(t);
  const s = (metric: string, extra?: string) => selector(t, metric, extra);
  const who = `${CONNECTOR} of ${STACK}`;
  const maxAge = humanSeconds(t.connectorMaxRunAgeSeconds);
  return {
    name: 'cmdb-connectors.alerts',
    rules: [
      alert(
        'CmdbConnectorError',
        'warning',
        `${s('cmdb_connector_health', 'health="error"')} == 1`,
        `CMDB ${who} failed its newest run`,
        `The newest run of ${who} ended with an error status (see cmdb_connector_status for the exact text). Its data is not being refreshed; the connector's error message and event log are in the CMDB UI.`,
      ),
      alert(
        'CmdbConnectorNotRun',
        'warning',
        // end_time, or start_time while a run has no end yet (0 or absent).
        `time() - (\n    ${s('cmdb_connector_last_run_end_timestamp_seconds')} > 0\n  or\n    ${s('cmdb_connector_last_run_start_timestamp_seconds')} > 0\n) > ${t.connectorMaxRunAgeSeconds}`,
        `CMDB ${who} has not run for {{ $value | humanizeDuration }}`,
        `The newest run of ${who} ended (or, without an end, started) {{ $value | humanizeDuration }} ago, more than ${maxAge}: its schedule may be disabled or the connector is stuck.`,
      ),
      alert(
        'CmdbConnectorNoOutput',
        'warning',
        `${s('cmdb_connector_input_records')} > 0\nand\n${s('cmdb_connector_output_records')} == 0`,
        `CMDB ${who} wrote no records`,
        `The newest run of ${who} read {{ $value }} records but wrote none: a mapping, filter or field change drops everything.`,
      ),
      alert(
        'CmdbConnectorMissingFields',
        'info',
        `${s('cmdb_connector_missing_fields')} > 0`,
        `CMDB ${who} misses {{ $value }} expected fields`,
        `The newest run of ${who} did not receive {{ $value }} of its expected input fields: the source changed its schema or the connector lacks permissions; records are incomplete.`,
      ),
    ],
  };
}
