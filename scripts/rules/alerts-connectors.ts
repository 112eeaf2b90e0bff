/**
 * Alerts on connectors (data sources), one per (connector, profile) from its newest run, except
 * CmdbConnectorNotRun (per connector over its profiles); and on the internal mergers. Action rows of
 * the run history are not connectors and have families of their own, outside these alerts.
 */
import { CONNECTOR, STACK, alertFactory, humanSeconds, selector } from './model.js';
import type { AlertRule, RuleGroup, Thresholds } from './model.js';

export function connectorAlerts(t: Thresholds): RuleGroup<AlertRule> {
  const alert = alertFactory(t);
  const s = (metric: string, extra?: string) => selector(t, metric, extra);
  const who = `${CONNECTOR} of ${STACK}`;
  const service = `connector {{ $labels.connector }} of ${STACK}`;
  const maxAge = humanSeconds(t.connectorMaxRunAgeSeconds);
  return {
    name: 'cmdb-connectors.alerts',
    rules: [
      alert(
        'CmdbConnectorError',
        'warning',
        `${s('cmdb_connector_health', 'health="error"')} == 1`,
        'CMDB connector run failed.',
        `The newest run of ${who} ended with an error status (see cmdb_connector_status for the exact text). Its data is not being refreshed; the connector's error message and event log are in the CMDB UI.`,
      ),
      alert(
        'CmdbConnectorNotRun',
        'warning',
        // Per connector (service) over all its profiles: the real service often files a run under
        // "Default profile" while the configured profile has a name, which must not make the named
        // profile look dead for ever. The time is when the run was written (_time on the service).
        `time() - max by (job, instance, stack, connector) (\n  ${s('cmdb_connector_last_run_timestamp_seconds')}\n) > ${t.connectorMaxRunAgeSeconds}`,
        'CMDB connector has not run for too long.',
        `The newest run of ${service}, over all its profiles, was written {{ $value | humanizeDuration }} ago, more than ${maxAge}: its schedule may be disabled, or the connector is stuck or failing before it writes a run.`,
      ),
      alert(
        'CmdbMergerStale',
        'warning',
        `time() - ${s('cmdb_merger_last_run_timestamp_seconds')} > ${t.mergerMaxRunAgeSeconds}`,
        'CMDB inventory merger has not run for too long.',
        `The newest run of the internal {{ $labels.merger }} of ${STACK} was written {{ $value | humanizeDuration }} ago, more than ${humanSeconds(t.mergerMaxRunAgeSeconds)}: the inventory is stale even if every connector ran, because the merger builds it from what they wrote. Check the merger tasks of the newest data ingestion run.`,
      ),
      alert(
        'CmdbConnectorNoOutput',
        'warning',
        `${s('cmdb_connector_input_records')} > 0\nand\n${s('cmdb_connector_output_records')} == 0`,
        'CMDB connector run wrote no records.',
        `The newest run of ${who} read {{ $value }} records but wrote none: a mapping, filter or field change drops everything.`,
      ),
      alert(
        'CmdbConnectorMissingFields',
        'info',
        `${s('cmdb_connector_missing_fields')} > 0`,
        'CMDB connector run misses expected fields.',
        `The newest run of ${who} did not receive {{ $value }} of its expected input fields: the source changed its schema or the connector lacks permissions; records are incomplete.`,
      ),
    ],
  };
}
