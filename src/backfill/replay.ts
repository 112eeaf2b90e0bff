/**
 * Replays the daemon's own collectors over a stack's history as it was known at each step, so that
 * backfilled series are the series the daemon would have exported: same names, labels and values.
 *
 * The history is cut into units (a connector key, an Action, a tracked name, the ingestion run
 * list, the day's counts), each with its own state memory: a collector's output for one entity
 * depends only on that entity's input. A unit runs its collector again when its input changed, at
 * the step before a change (as a live poll would have seen the old state, which keeps the state
 * memory's "last seen" times the same), and at every step for an hour after one (while the state
 * memory may forget a state); otherwise its lines are repeated: the replay costs the output, not
 * the output times the entities.
 */
import { type GroupName } from '../api/endpoints.js';
import { runKey, runTime } from '../api/connector-runs.js';
import type { Action, ActionJob, ChangeEntry, ConnectorRun, IngestionRun } from '../api/schemas.js';
import { collectActionJobs } from '../collectors/action-jobs.js';
import { collectActions } from '../collectors/actions.js';
import { collectAssetChanges, collectUserChanges } from '../collectors/changes.js';
import { collectConnectors } from '../collectors/connectors.js';
import { collectMetricsData } from '../collectors/inventory.js';
import { collectIngestionRuns } from '../collectors/ingestion-runs.js';
import { FORGET_STATE_AFTER_SECONDS, StateMemory } from '../collectors/state-memory.js';
import type { CollectorContext } from '../collectors/types.js';
import type { StackConfig } from '../config/types.js';
import { CATALOGUE, type MetricFamily } from '../metrics/catalogue.js';
import type { Sample } from '../metrics/sample.js';
import { formatLabels, formatValue } from '../metrics/series-text.js';
import { parseTimestamp } from '../time.js';
import type { StackHistory } from './history.js';

const DAY = 86_400;

/** A group polled less often (change history) is replayed at least this often: Prometheus' instant-query look-back. */
export const MAX_DEFAULT_STEP_SECONDS = 300;

/** Families of a replayed endpoint the history cannot reconstruct honestly (docs/backfill.md says why). */
export const OMITTED_FAMILIES: ReadonlySet<string> = new Set([
  'cmdb_action_status',
  'cmdb_action_next_run_timestamp_seconds',
]);

/** The endpoints replayed, by poll group; every other endpoint's families are left out (docs/backfill.md). */
export const REPLAYED: ReadonlyArray<{ group: GroupName; endpoints: readonly string[] }> = [
  { group: 'inventory', endpoints: ['metrics_data'] },
  { group: 'connectors', endpoints: ['connector'] },
  { group: 'ingestion', endpoints: ['data_ingestion'] },
  { group: 'actions', endpoints: ['actions'] },
  { group: 'actionJobs', endpoints: ['action_jobs'] },
  { group: 'changes', endpoints: ['asset_change', 'user_change'] },
];

/** Every family a backfill writes, in catalogue order. */
export const BACKFILLED_FAMILIES: readonly MetricFamily[] = CATALOGUE.filter(
  (f) => f.origin === 'snapshot' && f.endpoint !== undefined && REPLAYED.some((r) => r.endpoints.includes(f.endpoint as string)) && !OMITTED_FAMILIES.has(f.name),
);
const FAMILY_INDEX = new Map(BACKFILLED_FAMILIES.map((f, i) => [f.name, i]));

/** One formatted series of a unit: its family's index, `name{labels} value`, and the same as data for remote write. */
export interface Line {
  readonly family: number;
  readonly key: string;
  readonly text: string;
  readonly value: number;
  /** Every label of the series but the name, the target labels and `stack` included. */
  readonly labels: Readonly<Record<string, string>>;
  /**
   * The read unit the line comes from (answers.ts keys: `counts/2026-11-03`, `action-jobs/<id>`):
   * a later run that reads a unit missing before writes the lines of that unit only.
   */
  readonly source: string;
}

interface Unit {
  /** Times its input changes, ascending. */
  readonly events: readonly number[];
  readonly states: StateMemory;
  /** The collector over the input as known at `t`, given the number of events up to `t`. */
  readonly collect: (t: number, known: number, ctx: CollectorContext) => Sample[];
  /** The read unit its lines at `t` come from. */
  readonly source: (t: number) => string;
  known: number;
  ranAt: number | undefined;
  lines: Line[];
}

export interface GroupReplay {
  readonly group: GroupName;
  readonly step: number;
  /** Hands every unit's lines at `t` (increasing) to `emit`; without it the units only move on to `t`. */
  linesAt(t: number, emit?: (line: Line) => void): void;
}

/** How many of the ascending `times` are at or before `t`, starting the search at `from`. */
function countUpTo(times: readonly number[], t: number, from: number): number {
  let i = from;
  while (i < times.length && (times[i] as number) <= t) i++;
  return i;
}

function unit(events: number[], collect: Unit['collect'], source: string | Unit['source']): Unit {
  return { events, states: new StateMemory(), collect, source: typeof source === 'string' ? () => source : source, known: 0, ranAt: undefined, lines: [] };
}

const dayText = (t: number) => new Date(Math.floor(t / DAY) * DAY * 1000).toISOString().slice(0, 10);

function byTime<T>(items: readonly T[], time: (item: T) => number | undefined): Array<{ item: T; t: number }> {
  const out: Array<{ item: T; t: number }> = [];
  for (const item of items) {
    const t = time(item);
    if (t !== undefined) out.push({ item, t });
  }
  return out.sort((a, b) => a.t - b.t);
}

function connectorUnits(rows: readonly ConnectorRun[], tz: string): Unit[] {
  const byKey = new Map<string, ConnectorRun[]>();
  for (const row of rows) {
    const k = runKey(row);
    const list = byKey.get(k);
    if (list) list.push(row);
    else byKey.set(k, [row]);
  }
  return [...byKey.values()].map((list) => {
    const sorted = byTime(list, (r) => runTime(r, tz));
    return unit(
      sorted.map((s) => s.t),
      (_t, known, ctx) => collectConnectors(sorted.slice(0, known).map((s) => s.item), ctx),
      'connector-history',
    );
  });
}

/** The run list as it stood at `t`: runs started by then, those that ended later still running. */
function ingestionUnit(runs: readonly IngestionRun[], tz: string): Unit {
  const timed = runs.flatMap((run) => {
    const start = parseTimestamp(run.start_date, tz);
    return start === undefined ? [] : [{ run, start, end: parseTimestamp(run.end_date, tz) }];
  });
  return unit(
    timed.flatMap((r) => (r.end === undefined ? [r.start] : [r.start, r.end])).sort((a, b) => a - b),
    (t, _known, ctx) =>
      collectIngestionRuns(
        timed.filter((r) => r.start <= t).map((r) => (r.end !== undefined && r.end > t ? { ...r.run, status: 'running', end_date: null } : r.run)),
        ctx,
      ),
    'ingestion-runs',
  );
}

function jobTimes(jobs: readonly ActionJob[], tz: string): Array<{ item: ActionJob; t: number }> {
  return byTime(jobs, (j) => parseTimestamp(j.action_run_date, tz));
}

/**
 * An Action as listed at `t`: there once created; lastRunAt its newest job by then. Its source is
 * its jobs when they are read (an Action whose jobs could not be read has no unit at all: its
 * last run before the newest is unknown), the list when the jobs endpoint is off.
 */
function actionUnit(action: Action, jobs: readonly ActionJob[] | undefined, tz: string): Unit {
  const created = parseTimestamp(action.createdAt, tz) ?? -Infinity;
  const timed = jobs ? jobTimes(jobs, tz) : [];
  const lastRun = parseTimestamp(action.lastRunAt, tz);
  const events = [created, ...timed.map((j) => j.t), ...(jobs || lastRun === undefined ? [] : [lastRun])].sort((a, b) => a - b);
  return unit(events, (t, _known, ctx) => {
    if (created > t) return [];
    let lastRunAt: unknown = null;
    if (jobs) {
      const newest = timed.filter((j) => j.t <= t).at(-1);
      lastRunAt = newest?.item.action_run_date ?? null;
    } else if (lastRun !== undefined && lastRun <= t) lastRunAt = action.lastRunAt;
    return collectActions([{ ...action, lastRunAt: lastRunAt as Action['lastRunAt'], status: null, nextRunAt: null }], ctx);
  }, jobs ? `action-jobs/${action.actionId}` : 'actions');
}

function jobsUnit(id: string, jobs: readonly ActionJob[], tz: string): Unit {
  const timed = jobTimes(jobs, tz);
  return unit(
    timed.map((j) => j.t),
    (_t, known, ctx) => (known === 0 ? [] : collectActionJobs([{ id, value: timed.slice(0, known).map((j) => j.item) }], ctx)),
    `action-jobs/${id}`,
  );
}

function changeUnit(type: 'asset' | 'user', name: string, entries: readonly ChangeEntry[], tz: string): Unit {
  const timed = byTime(entries, (e) => parseTimestamp(e.changeTimeEpoch, tz) ?? parseTimestamp(e.changeTimeUTC, tz));
  const collect = type === 'asset' ? collectAssetChanges : collectUserChanges;
  return unit(
    timed.map((e) => e.t),
    (_t, known, ctx) => (known === 0 ? [] : collect([{ id: name, value: timed.slice(0, known).map((e) => e.item) }], ctx)),
    `${type}-changes/${name}`,
  );
}

/**
 * The day's counts at every step of a day that was read, nothing on a day that was not: a day
 * whose counts are missing is a hole, never the day before's counts carried on. The start of each
 * read day and of the day after it are its events, so the lines change exactly at midnight UTC.
 */
function inventoryUnit(days: StackHistory['days']): Unit {
  return unit(
    [...new Set([...days.keys()].flatMap((d) => [d, d + DAY]))].sort((a, b) => a - b),
    (t, _known, ctx) => {
      const record = days.get(Math.floor(t / DAY) * DAY);
      return record ? collectMetricsData(record, ctx) : [];
    },
    (t) => `counts/${dayText(t)}`,
  );
}

function unitsOf(group: GroupName, h: StackHistory, tz: string, jobsOff: boolean): Unit[] {
  switch (group) {
    case 'inventory':
      return h.days.size > 0 ? [inventoryUnit(h.days)] : [];
    case 'connectors':
      return h.connectorRows ? connectorUnits(h.connectorRows, tz) : [];
    case 'ingestion':
      return h.ingestionRuns ? [ingestionUnit(h.ingestionRuns, tz)] : [];
    case 'actions': {
      const seen = new Set<string>();
      const jobsRead = !jobsOff;
      return (h.actions ?? [])
        .filter((a) => !seen.has(a.actionId) && seen.add(a.actionId))
        .filter((a) => !jobsRead || h.actionJobs.has(a.actionId))
        .map((a) => actionUnit(a, h.actionJobs.get(a.actionId), tz));
    }
    case 'actionJobs':
      return [...h.actionJobs].map(([id, jobs]) => jobsUnit(id, jobs, tz));
    case 'changes':
      return [
        ...[...h.changes.asset].map(([name, e]) => changeUnit('asset', name, e, tz)),
        ...[...h.changes.user].map(([name, e]) => changeUnit('user', name, e, tz)),
      ];
    default:
      return [];
  }
}

export interface ReplayOptions {
  readonly stack: StackConfig;
  readonly history: StackHistory;
  readonly step: number | undefined;
  /** Labels Prometheus adds at scrape time (`job`, `instance`): the backfilled series are the scraped ones. */
  readonly targetLabels?: Readonly<Record<string, string>>;
  readonly debug?: (message: string, fields?: Record<string, unknown>) => void;
}

/** One replay per replayed poll group of the stack. */
export function replayStack(opts: ReplayOptions): GroupReplay[] {
  const { stack, history } = opts;
  const tz = stack.timezone;
  const debug = opts.debug ?? (() => undefined);
  const target = opts.targetLabels ?? {};
  return REPLAYED.map(({ group }) => {
    const step = opts.step ?? Math.min(stack.intervals[group], MAX_DEFAULT_STEP_SECONDS);
    const units = unitsOf(group, history, tz, stack.disabledEndpoints.includes('action_jobs'));
    /** Series key → the unit that holds it: the first unit to export a series keeps it, as the store keeps the first. */
    const owners = new Map<string, Unit>();
    const run = (u: Unit, t: number) => {
      for (const line of u.lines) if (owners.get(line.key) === u) owners.delete(line.key);
      const ctx: CollectorContext = { now: t, timeZone: tz, states: u.states, debug };
      const lines: Line[] = [];
      const source = u.source(t);
      for (const s of u.collect(t, u.known, ctx)) {
        const family = FAMILY_INDEX.get(s.name);
        if (family === undefined) continue;
        const f = BACKFILLED_FAMILIES[family] as MetricFamily;
        const labels = { ...target, stack: stack.name, ...s.labels };
        const key = `${s.name}${formatLabels(f.labels, labels)}`;
        const owner = owners.get(key);
        if (owner !== undefined && owner !== u) continue;
        owners.set(key, u);
        lines.push({ family, key, text: `${key} ${formatValue(s.value)}`, value: s.value, labels, source });
      }
      u.lines = lines;
      u.ranAt = t;
    };
    return {
      group,
      step,
      linesAt(t: number, emit?: (line: Line) => void) {
        for (const u of units) {
          const known = countUpTo(u.events, t, u.known);
          const changed = known !== u.known || u.ranAt === undefined;
          u.known = known;
          const next = u.events[known];
          const last = known > 0 ? (u.events[known - 1] as number) : undefined;
          const beforeChange = next !== undefined && next <= t + step;
          const forgetting = last !== undefined && t - last <= FORGET_STATE_AFTER_SECONDS + step;
          if (changed || beforeChange || forgetting) run(u, t);
          if (emit) for (const line of u.lines) emit(line);
        }
      },
    };
  });
}
