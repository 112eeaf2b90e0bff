/** Job history of each listed Action (…/action-jobs/<action_id>). action_status_msg is never read. */
import type { ActionJob } from '../api/schemas.js';
import { parseTimestamp } from '../time.js';
import type { Collector, CollectorContext } from './types.js';
import { SampleSet, firstOfEach, newestIndex, readTime } from './emit.js';

const LAST_JOB_STATUS = 'cmdb_action_last_job_status';
const LAST_JOB_STATUS_BASE = ['SUCCESS', 'FAILED'];

/**
 * action_status upper-cased (the service sends Success, SUCCESS and success alike), so that counts,
 * the state set and the alerts see one spelling; undefined when missing or blank.
 */
export function jobStatus(job: ActionJob): string | undefined {
  const s = job.action_status?.trim();
  return s ? s.toUpperCase() : undefined;
}

/** The newest job: greatest action_run_date (read in the stack's zone when it has none); ties → later. */
export function newestJob(jobs: readonly ActionJob[], timeZone = 'UTC'): ActionJob | undefined {
  const i = newestIndex(jobs, (j) => parseTimestamp(j.action_run_date, timeZone));
  return i === undefined ? undefined : jobs[i];
}

function collectJobs(actionId: string, jobs: readonly ActionJob[], out: SampleSet, ctx: CollectorContext): void {
  const key = { action_id: actionId };
  const counts = new Map<string, number>();
  for (const job of jobs) {
    const status = jobStatus(job) ?? 'unknown';
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  for (const [status, n] of counts) out.gauge('cmdb_action_jobs', { ...key, status }, n);

  const newest = newestJob(jobs, ctx.timeZone);
  if (!newest) return;
  out.gauge('cmdb_action_last_job_timestamp_seconds', key, readTime(ctx, 'action_run_date', newest.action_run_date, key));
  out.stateSet(LAST_JOB_STATUS, key, 'status', jobStatus(newest), LAST_JOB_STATUS_BASE);
  out.gauge('cmdb_action_last_job_results', key, newest.action_result_number ?? undefined);
}

export const collectActionJobs: Collector<'action_jobs'> = (lists, ctx) => {
  const out = new SampleSet(ctx);
  const once = firstOfEach(lists, (l) => l.id, ctx, 'job list of an Action given twice; later one ignored', (id) => ({ action_id: id }));
  // An Action without jobs has no last job and no counts: no samples at all.
  for (const { id, value } of once) collectJobs(id, value, out, ctx);
  return out.finish([LAST_JOB_STATUS]);
};
