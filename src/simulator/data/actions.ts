/**
 * Actions and their job history (spec 2.8, 2.9). Batch Actions run on a cron-like period; Actions
 * scheduled AFTER_DATA_INGESTION run when an ingestion run succeeds. A job depends only on (seed,
 * Action, time), so live ticks and advance() agree.
 */
import { Rng } from '../random.js';
import { seedTime } from '../day-offset.js';
import { isoUtc, zonelessDateTime } from '../format.js';
import { ACTION_TEMPLATES, type ActionTemplate, poolName, secret } from '../text.js';
import type { ActionJob, ActionState } from './types.js';

export const AFTER_INGESTION_TEXT = 'After Next Data Ingestion';
const BATCH_PERIODS_MIN = [10, 15, 20, 30];
const CREATORS = ['admin@example.com', 'j.doe@example.com', 'secops-automation'];
/** Spacing of the generated history of AFTER_DATA_INGESTION Actions: the ingestion cadence. */
const AFTER_INGESTION_SPACING_MS = 300_000;

function failureMessage(n: number): string {
  return n % 2 === 0
    ? `Webhook POST https://hooks.example.com/cmdb failed: 401 Unauthorized (Authorization: Bearer ${secret(n)})`
    : `SMTP login failed for reports@example.com with password ${secret(n)}`;
}

/** The share of live jobs that fail (the demo's banner says so: their alerts are not by design). */
export const JOB_FAILURE_CHANCE = 0.15;

/** One job run at `atMs`; `status` forces its outcome (scenario controls). */
export function makeJob(seed: number, actionKey: string, atMs: number, status?: string): ActionJob {
  const rng = Rng.of(seed, 'action-job', actionKey, seedTime(atMs));
  const outcome = status ?? (rng.chance(JOB_FAILURE_CHANCE) ? 'FAILED' : 'SUCCESS');
  const failed = outcome !== 'SUCCESS';
  const results = failed ? 0 : rng.int(0, 500);
  let message: string | null = null;
  if (failed) message = failureMessage(rng.int(0, 1_000_000));
  else if (rng.chance(0.3)) message = `Completed with ${results} results`;
  return {
    atMs,
    rank: rng.next(),
    row: {
      id: rng.hex(24),
      action_run_date: zonelessDateTime(atMs),
      action_status: outcome,
      action_status_msg: message,
      action_result_number: results,
      action_result_log_id: `log-${rng.hex(16)}`,
    },
  };
}

/**
 * Add a job to the (unsorted) list at the place its seeded rank gives it, so the order depends only
 * on which jobs there are; keep the newest `keep`.
 */
export function addJob(action: ActionState, job: ActionJob, keep: number): void {
  const at = action.jobs.findIndex((j) => j.rank > job.rank);
  action.jobs.splice(at < 0 ? action.jobs.length : at, 0, job);
  while (action.jobs.length > keep) {
    let oldest = 0;
    action.jobs.forEach((j, i) => {
      if (j.atMs < (action.jobs[oldest] as ActionJob).atMs) oldest = i;
    });
    action.jobs.splice(oldest, 1);
  }
  const newest = Math.max(...action.jobs.map((j) => j.atMs));
  if (Number.isFinite(newest)) action.row.lastRunAt = isoUtc(newest);
}

interface ActionInput {
  seed: number;
  key: string;
  id: string | number;
  template: ActionTemplate;
  name: string;
  afterIngestion: boolean;
  nowMs: number;
}

function makeAction(input: ActionInput): ActionState {
  const rng = Rng.of(input.seed, 'action', input.key);
  const periodMin = rng.pick(BATCH_PERIODS_MIN);
  const periodMs = periodMin * 60_000;
  const nextRunMs = Math.floor(input.nowMs / periodMs) * periodMs + periodMs;
  const createdAt = isoUtc(Math.floor(input.nowMs / 1000 - rng.int(30, 400) * 86_400) * 1000);
  return {
    key: input.key,
    row: {
      actionId: input.id,
      actionName: input.name,
      actionType: input.template.type,
      actionTypeDisplayName: input.template.typeDisplay,
      actionGroup: input.template.group,
      description: input.template.description,
      createdAt,
      createdBy: rng.pick(CREATORS),
      lastRunAt: createdAt,
      nextRunAt: input.afterIngestion ? AFTER_INGESTION_TEXT : isoUtc(nextRunMs),
      scheduleType: input.afterIngestion ? 'AFTER_DATA_INGESTION' : 'SCHEDULE_BATCH_DATA',
      scheduleCronExpression: input.afterIngestion ? '' : `0 0/${periodMin} * * * ?`,
      status: 'RUNNING',
    },
    jobs: [],
    ...(input.afterIngestion ? {} : { periodMs, nextRunMs }),
  };
}

/**
 * Past job times, newest first: the newest on the Action's own cadence, the older ones every
 * `spread`-th run of it (1: every run).
 */
function historyTimes(action: ActionState, count: number, nowMs: number, spread = 1): number[] {
  const cadence = action.periodMs ?? AFTER_INGESTION_SPACING_MS;
  const spacing = cadence * spread;
  const newest = action.nextRunMs !== undefined ? action.nextRunMs - cadence : nowMs - 60_000;
  return Array.from({ length: count }, (_, k) => newest - k * spacing + 2000 + (k % 7) * 1000);
}

/**
 * The i-th Action of a generated dataset, with `jobs` past jobs, spread over `historyMs` when given
 * (else on the Action's cadence). Every fourth id is a JSON number.
 */
export function generatedAction(seed: number, i: number, jobs: number, nowMs: number, historyMs?: number): ActionState {
  const rng = Rng.of(seed, 'action-id', i);
  const id: string | number = i % 4 === 0 ? 4100 + i : rng.hex(24);
  const action = makeAction({
    seed,
    key: String(id),
    id,
    template: ACTION_TEMPLATES[i % ACTION_TEMPLATES.length] as ActionTemplate,
    name: poolName(
      ACTION_TEMPLATES.map((t) => t.name),
      i,
      (n, k) => `${n} (${k})`,
    ),
    afterIngestion: i % 3 === 1,
    nowMs,
  });
  const cadence = action.periodMs ?? AFTER_INGESTION_SPACING_MS;
  const spread = historyMs === undefined || jobs < 2 ? 1 : Math.max(1, Math.floor(historyMs / (jobs - 1) / cadence));
  action.jobs = historyTimes(action, jobs, nowMs, spread).map((at, k) =>
    // The second Action's newest job failed, so a fresh dataset always shows a failing Action.
    makeJob(seed, action.key, at, i === 1 && k === 0 ? 'FAILED' : undefined),
  );
  const newest = action.jobs[0];
  if (newest) action.row.lastRunAt = isoUtc(newest.atMs);
  // Served unsorted, as the real service does.
  action.jobs.sort((a, b) => a.rank - b.rank);
  return action;
}

/** An Action added by a scenario control: a batch Action with no jobs yet. */
export function addedAction(seed: number, key: string, name: string | undefined, nowMs: number): ActionState {
  return makeAction({
    seed,
    key,
    id: key,
    template: ACTION_TEMPLATES[0] as ActionTemplate,
    name: name ?? `Action ${key}`,
    afterIngestion: false,
    nowMs,
  });
}
