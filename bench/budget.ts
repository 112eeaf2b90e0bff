/**
 * The request budget in practice. A first poll under the client-side token bucket (src/cmdb/budget.ts)
 * sends `burst` requests at once and the rest at the configured rate, so its duration is about
 * (requests − burst) / rate. The hourly volume follows the table in docs/design.md, fed with the
 * request counts measured per endpoint. The request-budget cell (`npm run bench -- --only
 * request-budget`) measures it instead: hours of polling at 200 Actions in simulated time, counted
 * from the simulator's request log, beside the naive schedule of the same configuration.
 */
import { burstFor } from '../src/cmdb/budget.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import { DEFAULT_INTERVALS, type StackConfig } from '../src/config/types.js';
import type { SimulatorSize } from '../src/simulator/api.js';
import { count, seconds, type Table } from './format.js';
import type { Progress, SizeResult } from './results.js';
import { CLOCK_MS } from './simulator-process.js';
import { BENCH_MAX_SERIES } from './sizes.js';
import { simulatedStack } from './virtual-time.js';

export const DEFAULT_RATE = BUILTIN_SETTINGS.rateLimitPerMinute;

/** Seconds a first poll of `requests` requests waits for the budget (request latency not included). */
export function budgetSeconds(requests: number, ratePerMinute: number): number {
  return (Math.max(0, requests - burstFor(ratePerMinute)) * 60) / ratePerMinute;
}

const perHour = (intervalSeconds: number) => 3600 / intervalSeconds;
/** docs/design.md: list + next every minute, detail once per run plus each minute of a 20-minute run. */
const INGESTION_PER_HOUR = 2 * perHour(DEFAULT_INTERVALS.ingestion) + 21;

/**
 * docs/design.md "Expected request volume", with C, P, A and T as measured for one size and J = A / 2
 * (its typical stack: 20 of 40 Actions ran in the hour): requests an hour, their share of the budget
 * (rate × 60), and the minutes the hourly refresh of every Action's jobs takes of it on its own.
 */
export function hourlyVolume(size: SizeResult, ratePerMinute = DEFAULT_RATE) {
  const seen = size.repeat.requestsByEndpoint;
  const connectorPages = seen.connector ?? 0;
  const actionPages = seen.actions ?? 0;
  const actions = size.hourLater.requestsByEndpoint.action_jobs ?? 0;
  const changedActions = Math.round(actions / 2);
  const trackedNames = (seen.asset_change ?? 0) + (seen.user_change ?? 0);
  const i = DEFAULT_INTERVALS;
  const total =
    perHour(i.inventory) +
    perHour(i.license) +
    perHour(i.connectors) * connectorPages +
    INGESTION_PER_HOUR +
    perHour(i.actions) * actionPages +
    changedActions +
    actions +
    perHour(i.changes) * trackedNames;
  return {
    connectorPages,
    actionPages,
    actions,
    changedActions,
    trackedNames,
    perHour: Math.round(total),
    budgetShare: total / (ratePerMinute * 60),
    refreshBurstMinutes: actions / ratePerMinute,
  };
}

// ---- the request-budget cell: the budget over simulated hours ----

/**
 * Connectors run once a day in this cell, as on the real service (docs/cmdb-api-notes.md), so the
 * connector history spans days as there. The simulator's demo cadence (every 3–10 minutes) packs
 * the 3,012 runs of the medium size into half an hour: the incremental scan's window (the newest run
 * held minus 15 minutes, plus the 5 minutes since the last poll) then holds some 2,400 rows, 5 pages
 * of 500, against the 2 pages of 2,000 of a full scan.
 */
export const BUDGET_CONNECTOR_PERIOD_S = 86_400;
/** The first simulated hour is start-up; the hourly figures are taken from the hours after it. */
export const WARMUP_HOURS = 1;

export interface RequestBudgetOptions {
  /** Simulator size knobs (the medium size: 200 Actions). */
  readonly knobs: Partial<SimulatorSize>;
  readonly hours: number;
  /** Wall-clock limit of the cell. */
  readonly maxWallSeconds: number;
}

/**
 * The exporter's own poll plan at the end of the run (src/cmdb/plan.ts, what
 * cmdb_exporter_request_demand_ratio reports): requests an hour by endpoint, in total, and ÷ budget.
 */
interface Plan {
  readonly perHour: Readonly<Record<string, number>>;
  readonly total: number;
  readonly ratio: number;
}

interface Summary {
  readonly stack: StackConfig;
  readonly plan?: Plan;
  readonly log: ReadonlyArray<{ readonly at: number; readonly endpoint: string }>;
  readonly runTimes: readonly number[];
  readonly actions: number;
  readonly connectorRows: number;
  readonly readyAtMs?: number;
  readonly maxBacklog: number;
  readonly simulatedHours: number;
  readonly wallSeconds: number;
}

/**
 * The naive schedule of a configuration, requests per hour by endpoint: every endpoint at its
 * interval (paged lists: every page), every Action's jobs at the Action interval, the newest
 * ingestion run's detail each ingestion poll, every tracked name each change-history poll.
 */
export function naiveSchedule(stack: StackConfig, sizes: { actions: number; connectorRows: number }): Record<string, number> {
  const i = stack.intervals;
  const pages = (rows: number, size: number) => Math.max(1, Math.ceil(rows / size));
  return {
    metrics_data: perHour(i.inventory),
    license: perHour(i.license),
    connector: perHour(i.connectors) * pages(sizes.connectorRows, stack.paging.connectorPageSize),
    data_ingestion: perHour(i.ingestion),
    data_ingestion_next: perHour(i.ingestion),
    data_ingestion_detail: perHour(i.ingestion),
    actions: perHour(i.actions) * pages(sizes.actions, stack.paging.actionPageSize),
    action_jobs: perHour(i.actionJobs) * sizes.actions,
    asset_change: perHour(i.changes) * stack.track.assets.length,
    user_change: perHour(i.changes) * stack.track.users.length,
  };
}

/** Most entries of sorted `times` (ms) in any window of `windowMs`, and where that window starts. */
export function busiestWindow(times: readonly number[], windowMs: number): { count: number; at: number } {
  let best = { count: 0, at: times[0] ?? 0 };
  for (let lo = 0, hi = 0; hi < times.length; hi++) {
    while ((times[hi] as number) - (times[lo] as number) >= windowMs) lo++;
    if (hi - lo + 1 > best.count) best = { count: hi - lo + 1, at: times[lo] as number };
  }
  return best;
}

/** The cell's figures: requests per hour by endpoint after start-up (measured) beside the naive schedule, and the goals' figures. */
export function summarise(s: Summary) {
  const from = CLOCK_MS + WARMUP_HOURS * 3_600_000;
  const steadyHours = Math.max(0, s.simulatedHours - WARMUP_HOURS);
  const steady = s.log.filter((r) => r.at >= from);
  const counts: Record<string, number> = {};
  for (const r of steady) counts[r.endpoint] = (counts[r.endpoint] ?? 0) + 1;
  const naive = naiveSchedule(s.stack, s);
  const perHour: Record<string, { measured: number; naive: number }> = {};
  for (const endpoint of new Set([...Object.keys(naive), ...Object.keys(counts)])) {
    perHour[endpoint] = { measured: (counts[endpoint] ?? 0) / steadyHours, naive: naive[endpoint] ?? 0 };
  }
  const runs = s.runTimes.filter((t) => t >= from).length / steadyHours;
  const refreshPerHour = (s.actions * 3600) / s.stack.intervals.actionJobsRefresh;
  const times = s.log.map((r) => r.at).sort((a, b) => a - b);
  const busiest = busiestWindow(times, 60_000);
  const settings = s.stack as StackConfig & { actionJobsPerMinute?: number };
  return {
    simulatedHours: s.simulatedHours,
    steadyHours,
    wallSeconds: s.wallSeconds,
    actions: s.actions,
    ratePerMinute: s.stack.rateLimitPerMinute,
    ...(settings.actionJobsPerMinute === undefined ? {} : { actionJobsPerMinute: settings.actionJobsPerMinute }),
    perHour,
    totalPerHour: steady.length / steadyHours,
    naivePerHour: Object.values(naive).reduce((a, b) => a + b, 0),
    jobFetchesPerHour: (counts.action_jobs ?? 0) / steadyHours,
    actionRunsPerHour: runs,
    refreshPerHour,
    // The goal's ceiling: 1.1 × runs plus the slow refresh (every Action once per intervals.actionJobsRefresh).
    jobFetchesAllowed: 1.1 * runs + refreshPerHour,
    busiestMinute: busiest.count,
    busiestMinuteAt: (busiest.at - CLOCK_MS) / 1000,
    startupRequests: times.filter((t) => t < CLOCK_MS + 600_000).length,
    // Until every enabled endpoint finished a first poll (absent: never).
    ...(s.readyAtMs === undefined ? {} : { readySeconds: (s.readyAtMs - CLOCK_MS) / 1000 }),
    maxBacklog: s.maxBacklog,
    ...(s.plan === undefined ? {} : { plan: s.plan }),
  };
}

/**
 * The exporter's polling of one stack in simulated time against the real simulator, both on one
 * VirtualTime: the exporter's client, poller and scheduler as the daemon wires them (with the
 * default settings), the simulator's data moving as its clock moves. Figures come from the
 * simulator's request log (what reached the CMDB) and its Action job history (the runs).
 */
export async function measureRequestBudget(opts: RequestBudgetOptions, progress: Progress): Promise<RequestBudgetFigures> {
  const { sim, stack, road, poller, time, run, close } = await simulatedStack({
    startMs: CLOCK_MS,
    size: opts.knobs,
    connectorPeriodSeconds: BUDGET_CONNECTOR_PERIOD_S,
    stack: (s) => ({ track: { assets: s.state().trackedAssets, users: s.state().trackedUsers } }),
    staleAfterSeconds: 3600,
    maxSeries: BENCH_MAX_SERIES,
  });
  const state = sim.state();
  const runs = new Set<string>();
  const runTimes: number[] = [];
  let readyAtMs: number | undefined;
  let maxBacklog = 0;
  let plan: Plan | undefined;
  let lastProgress = CLOCK_MS;
  const wallStart = performance.now();
  try {
    const settled = () => {
      // Ready: no endpoint keeps /readyz at 503 (src/stacks.ts asks the poller).
      if (readyAtMs === undefined && poller.pending().length === 0) readyAtMs = time.now();
      maxBacklog = Math.max(maxBacklog, poller.jobBacklog());
    };
    const moved = (to: number) => {
      for (const action of sim.dataset.actions.values()) {
        for (const job of action.jobs) {
          const key = `${action.key}@${job.atMs}`;
          if (job.atMs < CLOCK_MS || runs.has(key)) continue;
          runs.add(key);
          runTimes.push(job.atMs);
        }
      }
      if (to - lastProgress < 900_000) return;
      lastProgress = to;
      progress(`[request budget] ${((to - CLOCK_MS) / 3_600_000).toFixed(2)} simulated h, ${sim.requests().length} requests`);
    };
    await run(CLOCK_MS + opts.hours * 3_600_000, opts.maxWallSeconds, { settled, moved });
    // What the exporter plans, from what it saw over the run, to set beside what the log counts.
    const p = road.plan?.plan();
    if (p) plan = { perHour: p.perHour as Record<string, number>, total: p.total, ratio: p.ratio };
  } finally {
    await close();
  }
  return summarise({
    stack,
    log: sim.requests().map((r) => ({ at: r.at, endpoint: r.endpoint ?? 'unrouted' })),
    runTimes,
    actions: state.counts.actions,
    connectorRows: state.counts.connectorRuns,
    readyAtMs,
    maxBacklog,
    plan,
    simulatedHours: (time.now() - CLOCK_MS) / 3_600_000,
    wallSeconds: (performance.now() - wallStart) / 1000,
  });
}

export type RequestBudgetFigures = ReturnType<typeof summarise>;

const fixed = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : '–');

/** The cell as tables: requests per endpoint beside the naive schedule, then the goals. */
export function requestBudgetTables(f: RequestBudgetFigures): Table[] {
  const order = ['access_token', ...Object.keys(f.perHour).filter((e) => e !== 'access_token').sort()];
  // The exporter's own plan (what cmdb_exporter_request_demand_ratio reports) beside the count, where it made one.
  const plan = (n: number | undefined) => (f.plan ? [count(n ?? 0)] : []);
  const rows = order
    .filter((e) => f.perHour[e] !== undefined)
    .map((e) => {
      const { measured, naive } = f.perHour[e] as { measured: number; naive: number };
      return [e, count(measured), count(naive), naive > 0 ? `${fixed(measured / naive)}×` : '–', ...plan(f.plan?.perHour[e])];
    });
  rows.push(['total', count(f.totalPerHour), count(f.naivePerHour), `${fixed(f.totalPerHour / f.naivePerHour)}×`, ...plan(f.plan?.total)]);
  const pace = f.actionJobsPerMinute === undefined ? '' : `, actionJobsPerMinute ${f.actionJobsPerMinute}`;
  return [
    {
      title: `Requests per hour at ${count(f.actions)} Actions, measured from the simulator's request log over simulated hours ${WARMUP_HOURS}–${fixed(f.simulatedHours, 1)} (default settings: rateLimitPerMinute ${f.ratePerMinute}${pace}), beside the naive schedule of the same configuration${f.plan ? ' and the poll plan the exporter computed at the end' : ''}; ${seconds(f.wallSeconds)} of wall time`,
      head: ['endpoint', 'measured / h', 'naive / h', 'measured ÷ naive', ...(f.plan ? ['plan / h'] : [])],
      numericFrom: 1,
      rows,
    },
    {
      title: 'Request budget goals (issue 12), same run',
      head: ['figure', 'measured', 'goal'],
      numericFrom: 1,
      rows: [
        ['job fetches / h', count(f.jobFetchesPerHour), `≤ ${count(f.jobFetchesAllowed)} (1.1 × ${count(f.actionRunsPerHour)} runs + ${count(f.refreshPerHour)} refresh)`],
        ['job fetches per Action run', fixed(f.jobFetchesPerHour / f.actionRunsPerHour), '—'],
        ['all requests ÷ naive schedule', `${fixed(f.totalPerHour / f.naivePerHour)}×`, '≤ 0.45×'],
        ['busiest rolling 60 s (start-up included)', `${count(f.busiestMinute)} (from ${seconds(f.busiestMinuteAt)})`, '≤ 50'],
        ['requests in the first 10 min', count(f.startupRequests), '—'],
        ['ready after (simulated)', f.readySeconds === undefined ? 'never' : seconds(f.readySeconds), '≤ 30 s'],
        ['largest job-fetch backlog', count(f.maxBacklog), '—'],
        ...(f.plan === undefined
          ? []
          : [
              [
                'poll plan (cmdb_exporter_request_demand_ratio × budget) / h',
                `${count(f.plan.total)} (${fixed(f.plan.ratio)} of ${count(f.ratePerMinute * 60)})`,
                `≈ ${count(f.totalPerHour)} measured (${fixed(f.plan.total / f.totalPerHour)}×)`,
              ],
            ]),
      ],
    },
  ];
}
