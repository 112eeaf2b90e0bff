/** Task detail of the newest ingestion run (…/data-ingestion/detail/<run_id>). docker_cmd is never read. */
import type { Collector } from './types.js';
import { SampleSet, firstOfEach, label, readTime, span } from './emit.js';
import { runStatus } from './ingestion-runs.js';

const TASK_STATUS = 'cmdb_ingestion_task_status';
const TASK_STATUS_BASE = ['success', 'failed', 'running'];

export const collectIngestionDetail: Collector<'data_ingestion_detail'> = (detail, ctx) => {
  const out = new SampleSet(ctx);
  const runId = detail?.id;
  const tasks = firstOfEach(detail?.value ?? [], (t) => t.task_id, ctx, 'task_id repeated in the task list; later entry ignored', (id) => ({
    run_id: runId,
    task_id: id,
  }));
  for (const task of tasks) {
    const key = { task_id: task.task_id };
    out.stateSet(TASK_STATUS, key, 'status', runStatus(task) || undefined, TASK_STATUS_BASE);
    const where = { run_id: runId ?? '', ...key };
    const start = readTime(ctx, 'start_date', task.start_date, where);
    const end = readTime(ctx, 'end_date', task.end_date, where);
    out.gauge('cmdb_ingestion_task_duration_seconds', key, span(ctx, 'ingestion task', start, end, where));
    out.info('cmdb_ingestion_task_info', { ...key, operator: label(task.operator), image: label(task.docker_image) });
  }
  // With no run at all (null) every remembered task is forgotten, like any vanished entity.
  return out.finish([TASK_STATUS]);
};
