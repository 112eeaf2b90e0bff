/** The data ingestion and Actions sections of the CMDB overview. */
import { colorByName, fieldOverride, m, row, stat, timeseries, valueMappings } from './builders.js';
import type { Board } from './layout.js';
import { FROM_NOW, stateCell, table } from './tables.js';

const byStack = (metric: string) => `max by (stack) (${m(metric)})`;
const RUN_STATES: ReadonlyArray<readonly [string, string]> = [
  ['success', 'green'],
  ['running', 'blue'],
  ['failed', 'red'],
];

export function ingestionSection(board: Board): void {
  board.add(row('Data ingestion', 'Runs of the CMDB data ingestion (import from the connectors).'), 24, 1);
  ingestionState(board);
  mergers(board);
  ingestionRuns(board);
}

function ingestionState(board: Board): void {
  board.add(
    stat({
      title: 'Newest run',
      description:
        'Status of the newest data ingestion run per stack. Failed: open the task table below to find the failed task, then the run in the CMDB UI. Stuck in running for hours: see the CmdbIngestionRunTooLong runbook.',
      queries: [{ expr: `max by (stack, status) (${m('cmdb_ingestion_last_run_status')} == 1)`, legend: '{{stack}}: {{status}}' }],
      textMode: 'name',
      steps: [['orange', null]],
      overrides: RUN_STATES.map(([state, color]) => colorByName(`.*: ${state}$`, color)),
    }),
    5,
    6,
  );
  board.add(
    stat({
      title: 'In progress',
      description:
        'Whether a data ingestion run is running now. Running for much longer than a run usually takes: compare with the run durations and check the tasks in the CMDB UI.',
      queries: [{ expr: byStack('cmdb_ingestion_run_in_progress'), legend: '{{stack}}' }],
      mappings: valueMappings({ 0: ['idle', 'green'], 1: ['running', 'blue'] }),
      steps: [['text', null]],
    }),
    4,
    6,
  );
  board.add(
    stat({
      title: 'Since last success',
      description:
        'Time since the newest successful run ended. Above 26 hours CmdbIngestionNoRecentSuccess fires: the inventory is out of date; check recent runs for failures and the CMDB scheduler.',
      queries: [{ expr: `time() - ${byStack('cmdb_ingestion_last_success_timestamp_seconds')}`, legend: '{{stack}}' }],
      unit: 's',
      steps: [['green', null], ['orange', 86400], ['red', 93600]],
    }),
    5,
    6,
  );
  board.add(
    stat({
      title: 'Next run',
      description:
        'When the next scheduled run is due. Empty while a run is in progress (the CMDB then sends a text). In the past with no run in progress: the CMDB scheduler may be stopped, see CmdbIngestionOverdue.',
      queries: [{ expr: `${byStack('cmdb_ingestion_next_run_timestamp_seconds')} * 1000`, legend: '{{stack}}' }],
      unit: 'dateTimeFromNow',
      steps: [['text', null]],
    }),
    5,
    6,
  );
  board.add(
    table({
      title: 'Schedule',
      description: 'Ingestion schedule as configured in the CMDB. Not what you expect: change it in the CMDB UI.',
      labels: ['stack', 'schedule', 'schedule_type'],
      headers: { stack: 'Stack', schedule: 'Schedule', schedule_type: 'Type' },
      columns: [
        { expr: `max by (stack, schedule, schedule_type) (${m('cmdb_ingestion_schedule_info')})` },
        // One series per status: add them up per stack, after de-duplicating exporter replicas.
        { expr: `sum by (stack) (max by (stack, status) (${m('cmdb_ingestion_runs')}))`, name: 'Runs listed', props: { unit: 'short' } },
      ],
    }),
    5,
    6,
  );
}

/** The internal mergers build the inventory from what the connectors wrote (run history rows with platform ML-ENGINE). */
function mergers(board: Board): void {
  board.add(
    stat({
      title: 'Since last merger run',
      description:
        'Time since the asset and user mergers last wrote a run. The mergers build the inventory from what the connectors wrote: above 26 hours CmdbMergerStale fires and the inventory is stale even if every connector ran; check the merger tasks of the newest ingestion run.',
      queries: [{ expr: `time() - max by (stack, merger) (${m('cmdb_merger_last_run_timestamp_seconds')})`, legend: '{{stack}}: {{merger}}' }],
      unit: 's',
      steps: [['green', null], ['orange', 86400], ['red', 93600]],
    }),
    24,
    4,
  );
}

function ingestionRuns(board: Board): void {
  board.add(
    timeseries({
      title: 'Run durations',
      description:
        'Duration of the newest finished run and of each task of the newest run. A task that suddenly takes much longer points at its connector or the database; check the task in the CMDB UI.',
      queries: [
        { expr: byStack('cmdb_ingestion_last_run_duration_seconds'), legend: '{{stack}} run' },
        { expr: `max by (stack, task_id) (${m('cmdb_ingestion_task_duration_seconds')})`, legend: '{{stack}} {{task_id}}' },
      ],
      unit: 's',
    }),
    12,
    8,
  );
  board.add(
    table({
      title: 'Tasks of the newest run',
      description:
        'Tasks of the newest data ingestion run. A failed task: open the run in the CMDB UI and read the task log; the image tells which component ran it.',
      labels: ['stack', 'task_id', 'status', 'operator', 'image'],
      headers: { stack: 'Stack', task_id: 'Task', status: 'Status', operator: 'Operator', image: 'Image' },
      columns: [
        { expr: `max by (stack, task_id, status) (${m('cmdb_ingestion_task_status')} == 1)` },
        { expr: `max by (stack, task_id) (${m('cmdb_ingestion_task_duration_seconds')})`, name: 'Duration', props: { unit: 's' } },
        { expr: `max by (stack, task_id, operator, image) (${m('cmdb_ingestion_task_info')})` },
      ],
      overrides: [fieldOverride('Status', stateCell(RUN_STATES))],
    }),
    12,
    8,
  );
}

export function actionsSection(board: Board): void {
  const key = 'stack, action_id';
  const value = (metric: string) => `max by (${key}) (${m(metric)})`;
  board.add(row('Actions', 'Scheduled Actions and the newest job of each.'), 24, 1);
  board.add(
    stat({
      title: 'Actions whose newest job failed',
      description:
        'Actions whose newest job did not end with SUCCESS. Above 0: find them in the table (job status) and read the job log in the CMDB UI under Actions.',
      queries: [
        {
          expr: `count(max by (${key}) (${m('cmdb_action_last_job_status', 'status!="SUCCESS"')} == 1)) or vector(0)`,
          legend: 'failed',
        },
      ],
      unit: 'none',
      decimals: 0,
      steps: [['green', null], ['red', 1]],
    }),
    4,
    8,
  );
  board.add(
    table({
      title: 'Actions',
      description:
        'Each Action with the status and results of its newest job and its next run. Job status other than SUCCESS: read the job log in the CMDB UI. Next run in the past: see CmdbActionOverdue. No jobs listed: the action_jobs endpoint may be failing (Exporter health dashboard).',
      labels: ['stack', 'action_id', 'action_name', 'action_type', 'schedule_type', 'status'],
      headers: { stack: 'Stack', action_id: 'Action', action_name: 'Name', action_type: 'Type', schedule_type: 'Schedule', status: 'Newest job' },
      columns: [
        { expr: `max by (${key}, action_name, action_type, schedule_type) (${m('cmdb_action_info')})` },
        { expr: `max by (${key}, status) (${m('cmdb_action_last_job_status')} == 1)` },
        { expr: `${value('cmdb_action_last_job_timestamp_seconds')} * 1000`, name: 'Job run', props: FROM_NOW },
        { expr: value('cmdb_action_last_job_results'), name: 'Results', props: { unit: 'short' } },
        { expr: `${value('cmdb_action_next_run_timestamp_seconds')} * 1000`, name: 'Next run', props: FROM_NOW },
      ],
      overrides: [fieldOverride('Newest job', stateCell([['SUCCESS', 'green'], ['RUNNING', 'blue'], ['FAILED', 'red']]))],
    }),
    20,
    8,
  );
  board.add(
    timeseries({
      title: 'Results of the newest job per Action',
      description:
        'Number of results of the newest job of each Action. A sudden drop to 0 usually means the Action query or its data source changed: check the Action in the CMDB UI.',
      queries: [
        {
          expr: `${value('cmdb_action_last_job_results')}\n  * on (${key}) group_left (action_name)\n${`max by (${key}, action_name) (${m('cmdb_action_info')})`}`,
          legend: '{{stack}} {{action_name}}',
        },
      ],
      unit: 'none',
      decimals: 0,
    }),
    24,
    8,
  );
}
