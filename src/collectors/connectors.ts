/**
 * Connectors area (GET …/system/metrics/connector). The input is a run history: several rows per
 * connector profile, in any order (the client may already have kept only the newest row per key).
 * One series set per (bridge_name, profile name), from its newest row. Rows that are not connector
 * runs share the endpoint and get families of their own: the internal mergers (platform ML-ENGINE)
 * and outbound Scheduled Action runs (platform action).
 */
import { newestRuns, profileName, rebuildsOf, rowKind, runTime } from '../api/connector-runs.js';
import type { ConnectorRun } from '../api/schemas.js';
import type { Labels, Sample } from '../metrics/sample.js';
import type { Collector, CollectorContext } from './types.js';
import { SampleSet, label, readTime, span, statusText } from './emit.js';
import { HEALTH_STATES, eventCounts, fieldCounts, healthOf, missingFieldCount } from './connector-run.js';

const STATUS = 'cmdb_connector_status';
const HEALTH = 'cmdb_connector_health';
const MERGER_STATUS = 'cmdb_merger_status';
const ACTION_RUN_STATUS = 'cmdb_action_history_status';

function durationSeconds(run: ConnectorRun, ctx: CollectorContext, key: Labels, start?: number, end?: number): number | undefined {
  const minutes = run.duration_minutes;
  if (minutes == null) return span(ctx, 'connector run', start, end, key);
  if (minutes < 0) {
    ctx.debug('duration_minutes is negative; sample dropped', { field: 'duration_minutes', ...key });
    return undefined;
  }
  return minutes * 60;
}

function collectRun(run: ConnectorRun, out: SampleSet, ctx: CollectorContext): void {
  const key = { connector: run.bridge_name, profile: profileName(run) };
  out.info('cmdb_connector_info', {
    ...key,
    display_name: label(run.display_name),
    platform: label(run.platform),
    version: label(run.version),
  });
  out.stateSet(STATUS, key, 'status', statusText(run.status), []);
  const health = healthOf(run.status);
  for (const h of HEALTH_STATES) out.gauge(HEALTH, { ...key, health: h }, h === health ? 1 : 0);

  out.gauge('cmdb_connector_last_run_timestamp_seconds', key, runTime(run, ctx.timeZone));
  const start = readTime(ctx, 'start_time', run.start_time, key);
  const end = readTime(ctx, 'end_time', run.end_time, key);
  out.gauge('cmdb_connector_last_run_start_timestamp_seconds', key, start);
  out.gauge('cmdb_connector_last_run_end_timestamp_seconds', key, end);
  out.gauge('cmdb_connector_last_run_duration_seconds', key, durationSeconds(run, ctx, key, start, end));
  out.gauge('cmdb_connector_input_records', key, run.input_records ?? undefined);
  out.gauge('cmdb_connector_output_records', key, run.output_records ?? undefined);
  for (const [kind, count] of fieldCounts(run)) out.gauge('cmdb_connector_fields', { ...key, kind }, count);
  out.gauge('cmdb_connector_missing_fields', key, missingFieldCount(run));
  for (const [level, count] of eventCounts(run.event_messages)) {
    out.gauge('cmdb_connector_event_messages', { ...key, level }, count);
  }
}

/** A merger rebuilds the inventory from what the connectors wrote: stale when it stops finishing. */
function collectMerger(run: ConnectorRun, out: SampleSet, ctx: CollectorContext): void {
  const key = { merger: run.bridge_name };
  out.gauge('cmdb_merger_last_run_timestamp_seconds', key, runTime(run, ctx.timeZone));
  out.gauge('cmdb_merger_last_run_end_timestamp_seconds', key, readTime(ctx, 'end_time', run.end_time, key));
  out.stateSet(MERGER_STATUS, key, 'status', statusText(run.status), []);
  const health = healthOf(run.status);
  for (const h of HEALTH_STATES) out.gauge('cmdb_merger_health', { ...key, health: h }, h === health ? 1 : 0);
  out.gauge('cmdb_merger_output_records', key, run.output_records ?? undefined);
}

/** An outbound Scheduled Action run: bridge_name is the action type, profile the Action's name. */
function collectActionRun(run: ConnectorRun, out: SampleSet, ctx: CollectorContext): void {
  const key = { action_type: run.bridge_name, action_name: profileName(run) };
  out.gauge('cmdb_action_history_last_run_timestamp_seconds', key, runTime(run, ctx.timeZone));
  out.stateSet(ACTION_RUN_STATUS, key, 'status', statusText(run.status), []);
  const health = healthOf(run.status);
  for (const h of HEALTH_STATES) out.gauge('cmdb_action_history_health', { ...key, health: h }, h === health ? 1 : 0);
  out.gauge('cmdb_action_history_output_records', key, run.output_records ?? undefined);
}

const BY_KIND = { connector: collectRun, merger: collectMerger, action: collectActionRun } as const;

/** Runs mapped per step of connectorSteps: ~5 ms of work on the 2-core development machine. */
export const RUNS_PER_STEP = 100;

/**
 * The mapping of collectConnectors in steps of `perStep` runs: it pauses (yields) after each step
 * and returns the samples when done. Still a pure mapping; the caller decides what runs between the
 * steps (the poller lets scrapes through: ~1,000 runs at once held the event loop ~130 ms, most of
 * it the garbage collection of what the mapping allocated).
 */
export function* connectorSteps(runs: readonly ConnectorRun[], ctx: CollectorContext, perStep = RUNS_PER_STEP): Generator<void, Sample[]> {
  const out = new SampleSet(ctx);
  let n = 0;
  for (const run of newestRuns(runs, ctx.timeZone)) {
    BY_KIND[rowKind(run)](run, out, ctx);
    if (++n % perStep === 0) yield;
  }
  out.gauge('cmdb_data_as_of_timestamp_seconds', {}, rebuildsOf(runs, ctx.timeZone).newest);
  return out.finish([STATUS, MERGER_STATUS, ACTION_RUN_STATUS]);
}

export const collectConnectors: Collector<'connector'> = (runs, ctx) => {
  const steps = connectorSteps(runs, ctx, Infinity);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
};
