/**
 * Data ingestion runs (spec 2.5–2.7) on a demo cadence: a run every five minutes, lasting one to
 * two minutes. A scheduled run depends only on (seed, slot), so live ticks and advance() agree; the
 * task list of a run is computed when asked, from the run and the clock.
 */
import { Rng } from '../random.js';
import { seedTime } from '../day-offset.js';
import { isoOffsetMicros, isoOffsetSeconds } from '../format.js';
import { INGESTION_TASKS, poolName, secret } from '../text.js';
import type { IngestionRun, IngestionRunRow, IngestionState, IngestionTaskRow } from './types.js';

export const INGESTION_PERIOD_MS = 300_000;
/** The share of scheduled runs that fail. */
export const RUN_FAILURE_CHANCE = 0.1;
export const INGESTION_CRON = '*/5 * * * *';
export const IN_PROGRESS_TEXT = 'Data ingestion is in progress';
/** Nominal length of a run started by a scenario control, for laying out its tasks. */
const NOMINAL_RUN_US = 90_000_000;

export function scheduledRunId(ms: number): string {
  return `scheduled__${isoOffsetSeconds(ms)}`;
}

/** The run of one schedule slot, just started: when it will end and how is decided now. */
export function scheduledRun(seed: number, slotMs: number): IngestionRun {
  const rng = Rng.of(seed, 'ingestion-slot', seedTime(slotMs));
  const startUs = (slotMs + rng.int(1000, 4000)) * 1000 + rng.int(0, 999);
  return {
    id: scheduledRunId(slotMs),
    startUs,
    plannedEndUs: startUs + rng.int(60_000, 120_000) * 1000 + rng.int(0, 999),
    plannedOutcome: rng.chance(RUN_FAILURE_CHANCE) ? 'failed' : 'success',
    status: 'running',
  };
}

export function finishRun(run: IngestionRun, outcome: 'success' | 'failed', atUs: number): void {
  run.status = outcome;
  run.endUs = Math.max(atUs, run.startUs + 1);
  delete run.plannedEndUs;
}

/**
 * History of `count` runs; the newest is still running (then it has no end_date, and next_run_at is a text).
 * The older runs are `spacingMs` apart (a whole number of schedule slots; default one slot).
 */
export function initialIngestion(seed: number, count: number, nowMs: number, spacingMs = INGESTION_PERIOD_MS): IngestionState {
  const slots = Math.max(1, Math.round(spacingMs / INGESTION_PERIOD_MS));
  const newestSlot = Math.floor((nowMs - 5000) / INGESTION_PERIOD_MS) * INGESTION_PERIOD_MS;
  const runs: IngestionRun[] = [];
  for (let k = count - 1; k >= 0; k--) {
    const run = scheduledRun(seed, newestSlot - k * slots * INGESTION_PERIOD_MS);
    const plannedEndUs = run.plannedEndUs as number;
    if (k > 0) finishRun(run, run.plannedOutcome, plannedEndUs);
    else {
      // The newest run started well after its slot (a busy scheduler) and is still going now.
      const duration = plannedEndUs - run.startUs;
      run.startUs = Math.max(run.startUs, (nowMs - 45_000) * 1000 + (run.startUs % 1_000_000));
      run.plannedEndUs = Math.max(run.startUs + duration, (nowMs + 30_000) * 1000);
    }
    runs.push(run);
  }
  return { runs, nextSlotMs: newestSlot + INGESTION_PERIOD_MS };
}

export function runningRun(state: IngestionState): IngestionRun | undefined {
  return state.runs.find((r) => r.status === 'running');
}

export function ingestionRunRow(run: IngestionRun): IngestionRunRow {
  const row: IngestionRunRow = {
    id: run.id,
    run_type: 'scheduled',
    status: run.status,
    start_date: isoOffsetMicros(run.startUs),
  };
  if (run.endUs !== undefined) row.end_date = isoOffsetMicros(run.endUs);
  return row;
}

export function nextRunRow(state: IngestionState, nowMs: number) {
  const next = Math.floor(nowMs / INGESTION_PERIOD_MS) * INGESTION_PERIOD_MS + INGESTION_PERIOD_MS;
  return {
    next_run_at: runningRun(state) ? IN_PROGRESS_TEXT : isoOffsetSeconds(next),
    schedule_interval_value: INGESTION_CRON,
    schedule_interval_type: 'CronExpression',
  };
}

function dockerCmd(task: string, runId: string, n: number): string {
  const module = task.replace(/_\d+$/, '');
  return n % 2 === 0
    ? `python -m cmdb.ingest.${module} --run-id '${runId}' --db-url postgresql://ingest:${secret(n)}@db.internal:5432/cmdb`
    : `sh -c "AWS_SECRET_ACCESS_KEY=${secret(n)} python -m cmdb.ingest.${module} --bucket cmdb-staging"`;
}

/** `name:version`, the same for a task in every run. */
function dockerImage(seed: number, i: number): string {
  const image = (INGESTION_TASKS[i % INGESTION_TASKS.length] as readonly [string, string])[1];
  const rng = Rng.of(seed, 'image', image);
  return `${image}:${rng.int(1, 3)}.${rng.int(0, 14)}.${rng.int(0, 9)}`;
}

/** Task list of a run as it stands at `nowUs`: tasks run one after another across the run. */
export function taskRows(seed: number, run: IngestionRun, tasksPerRun: number, nowUs: number): IngestionTaskRow[] {
  const rng = Rng.of(seed, 'ingestion-tasks', run.id);
  const endUs = run.endUs ?? run.plannedEndUs ?? run.startUs + NOMINAL_RUN_US;
  const weights = Array.from({ length: tasksPerRun }, () => rng.int(1, 5));
  const total = weights.reduce((a, b) => a + b, 0);
  const failAt = run.status === 'failed' ? rng.int(0, tasksPerRun - 1) : -1;
  let cursor = run.startUs;
  let runningAt = -1;
  return weights.map((w, i) => {
    const taskStart = cursor;
    const taskEnd = i === tasksPerRun - 1 ? endUs : cursor + Math.floor(((endUs - run.startUs) * w) / total);
    cursor = taskEnd;
    const taskId = poolName(
      INGESTION_TASKS.map(([t]) => t),
      i,
      (t, k) => `${t}_${k}`,
    );
    let status = 'success';
    if (run.status === 'failed' && i > failAt) status = 'upstream_failed';
    else if (run.status === 'failed' && i === failAt) status = 'failed';
    else if (run.status === 'running' && runningAt >= 0) status = 'queued';
    else if (run.status === 'running' && (taskEnd > nowUs || i === tasksPerRun - 1)) {
      status = 'running';
      runningAt = i;
    }
    const row: IngestionTaskRow = {
      task_id: taskId,
      operator: 'DockerOperator',
      docker_cmd: dockerCmd(taskId, run.id, rng.int(0, 1_000_000) + i),
      docker_image: dockerImage(seed, i),
      status,
    };
    // Queued and skipped tasks have not started; a running task has no end yet (like its run).
    if (status !== 'queued' && status !== 'upstream_failed') row.start_date = isoOffsetMicros(taskStart);
    if (status === 'success' || status === 'failed') row.end_date = isoOffsetMicros(taskEnd);
    return row;
  });
}
