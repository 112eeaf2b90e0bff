/**
 * The ingestion run list (…/data-ingestion). Statuses are Airflow states; they are lowercased so
 * alerts can match "failed" whatever the case the service used.
 */
import type { IngestionRun } from '../api/schemas.js';
import { parseTimestamp } from '../time.js';
import type { Collector, CollectorContext } from './types.js';
import { SampleSet, newestIndex, readTime, span } from './emit.js';

const LAST_STATUS = 'cmdb_ingestion_last_run_status';
const LAST_STATUS_BASE = ['running', 'success', 'failed'];
const IN_PROGRESS: ReadonlySet<string> = new Set(['running', 'queued']);

/** The status lowercased and trimmed; "" when missing. */
export function runStatus(run: { readonly status?: string | null }): string {
  return (run.status ?? '').trim().toLowerCase();
}

/** Airflow run ids carry their logical date: `scheduled__2024-05-01T00:00:00+00:00`. */
function idTime(id: string, timeZone: string): number | undefined {
  const at = id.indexOf('__');
  return at < 0 ? undefined : parseTimestamp(id.slice(at + 2), timeZone);
}

function runTime(run: IngestionRun, timeZone: string): number | undefined {
  return parseTimestamp(run.start_date, timeZone) ?? idTime(run.id, timeZone);
}

/**
 * The newest run: greatest start_date (read in the stack's time zone), else the time inside its id;
 * ties → the later in the list. Runs with neither lose to any run with a time. Undefined only for
 * an empty list.
 */
export function newestRun(runs: readonly IngestionRun[], timeZone: string): IngestionRun | undefined {
  const i = newestIndex(runs, (r) => runTime(r, timeZone));
  return i === undefined ? undefined : runs[i];
}

/** The run is under way: Airflow queues a run before it starts it, so `queued` counts as `running`. */
export function runInProgress(run: { readonly status?: string | null }): boolean {
  return IN_PROGRESS.has(runStatus(run));
}

/**
 * The run whose task detail is exported (cmdb_ingestion_task_*): the newest run, its status, and
 * whether it is under way (its detail is then fetched again at every poll). The one rule for the
 * poller, which decides when to fetch, and the collectors.
 */
export function detailRun(runs: readonly IngestionRun[], timeZone: string): { run: IngestionRun; status: string; inProgress: boolean } | undefined {
  const run = newestRun(runs, timeZone);
  return run && { run, status: runStatus(run), inProgress: runInProgress(run) };
}

function collectRunCounts(runs: readonly IngestionRun[], out: SampleSet): void {
  const counts = new Map<string, number>();
  for (const run of runs) {
    const status = runStatus(run) || 'unknown';
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }
  for (const [status, n] of counts) out.gauge('cmdb_ingestion_runs', { status }, n);
  // Airflow queues a run before it starts it: a queued run is under way for the overdue and
  // too-long alerts, not missing.
  const running = runs.some(runInProgress);
  out.gauge('cmdb_ingestion_run_in_progress', {}, running ? 1 : 0);
}

function collectNewest(runs: readonly IngestionRun[], out: SampleSet, ctx: CollectorContext): void {
  const tz = ctx.timeZone;
  const newest = newestRun(runs, tz);
  if (!newest) return;
  out.gauge('cmdb_ingestion_last_run_start_timestamp_seconds', {}, readTime(ctx, 'start_date', newest.start_date, { run_id: newest.id }));
  out.stateSet(LAST_STATUS, {}, 'status', runStatus(newest) || undefined, LAST_STATUS_BASE);

  const success = newestRun(runs.filter((r) => runStatus(r) === 'success'), tz);
  if (success) {
    out.gauge('cmdb_ingestion_last_success_timestamp_seconds', {}, readTime(ctx, 'end_date', success.end_date, { run_id: success.id }));
  }
  const finished = newestRun(runs.filter((r) => r.end_date != null && r.end_date !== ''), tz);
  if (finished) {
    const where = { run_id: finished.id };
    const start = readTime(ctx, 'start_date', finished.start_date, where);
    const end = readTime(ctx, 'end_date', finished.end_date, where);
    out.gauge('cmdb_ingestion_last_run_duration_seconds', {}, span(ctx, 'ingestion run', start, end, where));
  }
}

export const collectIngestionRuns: Collector<'data_ingestion'> = (runs, ctx) => {
  const out = new SampleSet(ctx);
  collectRunCounts(runs, out);
  collectNewest(runs, out, ctx);
  return out.finish([LAST_STATUS]);
};
