/** Alerts on data ingestion runs and on Actions. */
import { ACTION, STACK, alertFactory, humanSeconds, selector, withActionName } from './model.js';
import type { AlertRule, RuleGroup, Thresholds } from './model.js';

export function ingestionAlerts(t: Thresholds): RuleGroup<AlertRule> {
  const alert = alertFactory(t);
  const s = (metric: string, extra?: string) => selector(t, metric, extra);
  const maxRun = humanSeconds(t.ingestionMaxRunSeconds);
  const maxSuccessAge = humanSeconds(t.ingestionMaxSuccessAgeSeconds);
  return {
    name: 'cmdb-ingestion.alerts',
    rules: [
      alert(
        'CmdbIngestionRunFailed',
        'warning',
        `${s('cmdb_ingestion_last_run_status', 'status="failed"')} == 1`,
        'CMDB data ingestion run failed.',
        `The newest data ingestion run of ${STACK} has status failed: the inventory was not refreshed. The failed task is in the task status of the run (cmdb_ingestion_task_status) and in the CMDB UI.`,
      ),
      alert(
        'CmdbIngestionRunTooLong',
        'warning',
        `time() - ${s('cmdb_ingestion_last_run_start_timestamp_seconds')} > ${t.ingestionMaxRunSeconds}\nand\n${s('cmdb_ingestion_run_in_progress')} == 1`,
        'CMDB data ingestion run takes too long.',
        `The newest data ingestion run of ${STACK} started {{ $value | humanizeDuration }} ago and is still running (limit ${maxRun}): a task may hang.`,
      ),
      alert(
        'CmdbIngestionNoRecentSuccess',
        'critical',
        `time() - ${s('cmdb_ingestion_last_success_timestamp_seconds')} > ${t.ingestionMaxSuccessAgeSeconds}`,
        'No CMDB data ingestion run succeeded for too long.',
        `The newest successful data ingestion run of ${STACK} ended {{ $value | humanizeDuration }} ago (limit ${maxSuccessAge}): the inventory is out of date.`,
      ),
      // The list is polled fine, yet for the whole limit it held no successful run (the success
      // time is then absent, so the rule above cannot see it).
      alert(
        'CmdbIngestionNoSuccessListed',
        'critical',
        `${s('cmdb_endpoint_up', 'endpoint="data_ingestion"')} == 1\nunless ignoring (endpoint)\n${s('cmdb_ingestion_last_success_timestamp_seconds')}`,
        'No successful CMDB data ingestion run is listed.',
        `The data ingestion run list of ${STACK} has held no successful run for ${maxSuccessAge}: the inventory is out of date.`,
        maxSuccessAge,
      ),
      alert(
        'CmdbIngestionOverdue',
        'warning',
        `time() - ${s('cmdb_ingestion_next_run_timestamp_seconds')} > ${t.ingestionNextRunGraceSeconds}\nunless\n${s('cmdb_ingestion_run_in_progress')} == 1`,
        'Scheduled CMDB data ingestion run is overdue.',
        `The next data ingestion run of ${STACK} was due {{ $value | humanizeDuration }} ago (grace ${humanSeconds(t.ingestionNextRunGraceSeconds)}) and no run is in progress: the scheduler of the CMDB may be stopped.`,
      ),
    ],
  };
}

export function actionAlerts(t: Thresholds): RuleGroup<AlertRule> {
  const alert = alertFactory(t);
  const s = (metric: string, extra?: string) => selector(t, metric, extra);
  const who = `${ACTION} of ${STACK}`;
  return {
    name: 'cmdb-actions.alerts',
    rules: [
      alert(
        'CmdbActionJobFailed',
        'warning',
        withActionName(t, `${s('cmdb_action_last_job_status', `status!~"${t.actionJobOkStatuses}"`)} == 1`),
        'CMDB Action job did not succeed.',
        `The newest job of ${who} has status {{ $labels.status }}. The job's status message and result log are in the CMDB UI under Actions.`,
      ),
      alert(
        'CmdbActionOverdue',
        'warning',
        withActionName(t, `time() - ${s('cmdb_action_next_run_timestamp_seconds')} > ${t.actionNextRunGraceSeconds}`),
        'Scheduled CMDB Action is overdue.',
        `${who} was due to run {{ $value | humanizeDuration }} ago (grace ${humanSeconds(t.actionNextRunGraceSeconds)}) and has not run since: its schedule or the CMDB's job runner may be stuck.`,
      ),
    ],
  };
}
