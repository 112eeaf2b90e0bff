/**
 * Connectors area (GET …/system/metrics/connector). The input is a run history: several rows per
 * connector profile, in any order. One series set per (bridge_name, profile name), from its newest row.
 */
import type { ConnectorRun } from '../api/schemas.js';
import type { Labels } from '../metrics/sample.js';
import { parseTimestamp } from '../time.js';
import type { Collector, CollectorContext } from './types.js';
import { SampleSet, label, readTime, span } from './emit.js';
import { defineArea } from './area.js';
import { HEALTH_STATES, eventCounts, fieldCounts, healthOf, missingFieldCount } from './connector-run.js';

const STATUS = 'cmdb_connector_status';
const HEALTH = 'cmdb_connector_health';

/** profile.profile_name for an object, the text itself for a string, "" for null/absent (merger rows). */
export function profileName(run: ConnectorRun): string {
  const p = run.profile;
  if (typeof p === 'string') return p;
  return p?.profile_name ?? '';
}

/** When the row was written: `_time`, else `_utc`, else end_time, else start_time. */
function runTime(run: ConnectorRun, timeZone: string): number | undefined {
  return (
    parseTimestamp(run._time) ??
    parseTimestamp(run._utc, timeZone) ??
    parseTimestamp(run.end_time, timeZone) ??
    parseTimestamp(run.start_time, timeZone)
  );
}

/** The newest row per (bridge_name, profile name), in order of first appearance; ties → later row. */
export function newestRuns(runs: readonly ConnectorRun[], timeZone: string): ConnectorRun[] {
  const newest = new Map<string, { run: ConnectorRun; time: number }>();
  for (const run of runs) {
    const key = JSON.stringify([run.bridge_name, profileName(run)]);
    const time = runTime(run, timeZone) ?? -Infinity;
    const best = newest.get(key);
    if (!best || time >= best.time) newest.set(key, { run, time });
  }
  return [...newest.values()].map((v) => v.run);
}

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
  const status = run.status != null && run.status.trim() !== '' ? run.status : undefined;
  out.stateSet(STATUS, key, 'status', status, []);
  const health = healthOf(run.status);
  for (const h of HEALTH_STATES) out.gauge(HEALTH, { ...key, health: h }, h === health ? 1 : 0);

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

export const collectConnectors: Collector<'connector'> = (runs, ctx) => {
  const out = new SampleSet(ctx);
  for (const run of newestRuns(runs, ctx.timeZone)) collectRun(run, out, ctx);
  return out.finish([STATUS]);
};

export const connectorsArea = defineArea({
  name: 'connectors',
  endpoints: ['connector'],
  collectors: { connector: collectConnectors },
});
