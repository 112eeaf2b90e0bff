/**
 * The request budget, measured. `measureBudget`: a real first poll under the default request budget
 * (small size, wall time). `measureRequestBudget`: hours of polling at 200 Actions in simulated time,
 * counted from the simulator's request log, beside the naive schedule of the same configuration.
 */
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import type { GroupName } from '../src/api/endpoints.js';
import { burstFor } from '../src/cmdb/budget.js';
import { openRoad } from '../src/cmdb/road.js';
import { createDispatcher } from '../src/cmdb/dispatcher.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { StackConfig } from '../src/config/types.js';
import { createLogger } from '../src/logger.js';
import { createInstruments } from '../src/metrics/instruments.js';
import { nextScheduledRun, Scheduler } from '../src/scheduler/scheduler.js';
import { enabledEndpoints, pollSettings } from '../src/config/endpoints.js';
import { StackPoller } from '../src/scheduler/stack-poller.js';
import { SecretScrubber } from '../src/secrets.js';
import { startSimulator } from '../src/simulator/server.js';
import { SnapshotStore } from '../src/store/snapshot-store.js';
import { budgetSeconds, DEFAULT_RATE, summarise, BUDGET_CONNECTOR_PERIOD_S, BUDGET_START_MS, requestBudgetTables, type RequestBudgetOptions } from './budget.js';
import { textTable } from './format.js';
import { startChild, type Child } from './children.js';
import type { BudgetFigures, RequestBudgetFigures } from './results.js';
import type { Progress } from './results.js';
import { exporterInput, pollRun, startSimulatorProcess } from './size-run.js';
import { BENCH_MAX_SERIES, sizeByName, type BenchSize } from './sizes.js';
import { countingDispatcher, settle, VirtualTime } from './virtual-time.js';

export async function measureBudget(size: BenchSize | undefined, progress: Progress): Promise<BudgetFigures> {
  const figures = { ratePerMinute: DEFAULT_RATE, burst: burstFor(DEFAULT_RATE) };
  if (!size) return figures;
  progress(`[budget] first poll of the ${size.name} size at the default ${DEFAULT_RATE} requests/min`);
  const { child: simChild, sim } = await startSimulatorProcess(size);
  let exporter: Child | undefined;
  try {
    exporter = await startChild('exporter-process.ts', []);
    await exporter.call('start', exporterInput(sim, DEFAULT_RATE));
    const run = await pollRun(sim, exporter);
    const measured = {
      size: size.name,
      requests: run.requests,
      wallSeconds: run.wallMs / 1000,
      modelSeconds: budgetSeconds(run.requests, DEFAULT_RATE),
    };
    return { ...figures, measured };
  } finally {
    await exporter?.call('close').catch(() => undefined);
    await exporter?.stop();
    await simChild.stop();
  }
}

// ---- the request budget over simulated hours (issue 12) ----

/**
 * The exporter's polling of one stack in simulated time against the real simulator, both on one
 * VirtualTime: the exporter's client, poller and scheduler as the daemon wires them (with the
 * default settings), the simulator's data moving as its clock moves. Figures come from the
 * simulator's request log (what reached the CMDB) and its Action job history (the runs).
 */
export async function measureRequestBudget(opts: RequestBudgetOptions, progress: Progress): Promise<RequestBudgetFigures> {
  const time = new VirtualTime(BUDGET_START_MS);
  const sim = await startSimulator({
    host: '127.0.0.1',
    port: 0,
    seed: 42,
    size: opts.knobs,
    live: false,
    now: () => BUDGET_START_MS,
    connectorPeriodSeconds: BUDGET_CONNECTOR_PERIOD_S,
  });
  const state = sim.state();
  const stack: StackConfig = {
    ...BUILTIN_SETTINGS,
    name: 'bench',
    baseUrl: sim.url,
    auth: { kind: 'client', clientId: sim.clientId, secret: sim.secret, clientIdKey: 'clientID' },
    track: { assets: state.trackedAssets, users: state.trackedUsers },
    tls: { insecureSkipVerify: false },
  };
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const scrubber = new SecretScrubber();
  const logger = createLogger({ level: 'silent', format: 'json', scrubber });
  const store = new SnapshotStore({ instruments, logger });
  store.addStack(stack.name, new Map(enabledEndpoints(stack).map((e) => [e, { intervalSeconds: 60, staleAfterSeconds: 3600 }])), BENCH_MAX_SERIES);
  const { dispatcher, inFlight } = countingDispatcher(createDispatcher(stack));
  const road = openRoad({ stack, instruments, logger, scrubber, clock: time, dispatcher, enabled: enabledEndpoints(stack) });
  const sleep = (ms: number, signal?: AbortSignal) => time.sleep(ms, signal);
  const poller = new StackPoller({ stack, settings: pollSettings(stack), api: road.readers, store, logger, scrubber, now: () => time.now() / 1000, sleep });
  const groupOf = (name: string) => name.slice(name.indexOf('/') + 1) as GroupName;
  const cron = time.cron((name, nowMs) => 1000 * nextScheduledRun(stack.name, groupOf(name), stack.intervals[groupOf(name)], nowMs / 1000));
  const scheduler = new Scheduler({ instruments, logger, cron, initialJitterMs: 0, nowMs: () => time.now() });

  const endMs = BUDGET_START_MS + opts.hours * 3_600_000;
  const runs = new Set<string>();
  const runTimes: number[] = [];
  const noteRuns = () => {
    for (const action of sim.dataset.actions.values()) {
      for (const job of action.jobs) {
        const key = `${action.key}@${job.atMs}`;
        if (job.atMs < BUDGET_START_MS || runs.has(key)) continue;
        runs.add(key);
        runTimes.push(job.atMs);
      }
    }
  };
  let readyAtMs: number | undefined;
  let maxBacklog = 0;
  let plan: RequestBudgetFigures['plan'];
  const wallStart = performance.now();
  try {
    scheduler.add(poller);
    let lastProgress = BUDGET_START_MS;
    // Bounded by simulated time and by a wall-clock limit.
    while (time.now() < endMs && performance.now() - wallStart < opts.maxWallSeconds * 1000) {
      await settle(time, inFlight);
      if (readyAtMs === undefined && pendingOf(poller) === 0) readyAtMs = time.now();
      maxBacklog = Math.max(maxBacklog, backlogOf(poller));
      const next = time.next();
      if (next === undefined) break;
      const to = Math.min(next, endMs);
      sim.scenario.advance((to - time.now()) / 1000);
      time.advance(to);
      noteRuns();
      if (to - lastProgress >= 900_000) {
        lastProgress = to;
        progress(`[request budget] ${((to - BUDGET_START_MS) / 3_600_000).toFixed(2)} simulated h, ${sim.requests().length} requests`);
      }
    }
    // What the exporter plans, from what it saw over the run, to set beside what the log counts.
    const p = road.plan?.plan();
    if (p) plan = { perHour: p.perHour as Record<string, number>, total: p.total, ratio: p.ratio };
  } finally {
    await scheduler.stop(0);
    await road.close();
    await sim.close();
  }
  const reached = time.now();
  if (opts.dumpLog) {
    const lines = sim.requests().map((r) => JSON.stringify({ t: (r.at - BUDGET_START_MS) / 1000, endpoint: r.endpoint, query: r.rawQuery, status: r.status }));
    writeFileSync(opts.dumpLog, `${lines.join('\n')}\n`);
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
    simulatedHours: (reached - BUDGET_START_MS) / 3_600_000,
    wallSeconds: (performance.now() - wallStart) / 1000,
  });
}

/** Endpoints that keep /readyz at 503, as src/stacks.ts asks (older versions: every endpoint's first poll). */
function pendingOf(poller: StackPoller): number {
  const p = poller as unknown as { pending?: () => unknown[] };
  return typeof p.pending === 'function' ? p.pending().length : poller.runner.pending().length;
}

/** The job-fetch backlog, where the poller has one (older versions do not). */
function backlogOf(poller: StackPoller): number {
  const p = poller as unknown as { jobBacklog?: () => number };
  return typeof p.jobBacklog === 'function' ? p.jobBacklog() : 0;
}

const CELL_USAGE = `Usage: tsx bench/budget-run.ts [--hours N] [--max-wall-seconds N] [--json FILE] [--dump-log FILE]

The request-budget cell alone: the medium size (200 Actions, connectors running once a day as on
the real service) polled with the default settings for N simulated hours (default 3; the first is
start-up), figures from the simulator's request log.`;

async function cellMain(): Promise<void> {
  const { values } = parseArgs({
    options: {
      hours: { type: 'string' },
      'max-wall-seconds': { type: 'string' },
      json: { type: 'string' },
      'dump-log': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(CELL_USAGE);
    return;
  }
  const medium = sizeByName('medium');
  if (!medium) throw new Error('no medium size');
  const figures = await measureRequestBudget(
    { knobs: medium.knobs, hours: Number(values.hours ?? 3), maxWallSeconds: Number(values['max-wall-seconds'] ?? 900), dumpLog: values['dump-log'] },
    (m) => console.error(`bench: ${m}`),
  );
  for (const table of requestBudgetTables(figures)) console.log(`${textTable(table)}\n`);
  if (figures.plan) {
    const rows = Object.entries(figures.plan.perHour).map(([e, n]) => `${e} ${n.toFixed(1)} (measured ${(figures.perHour[e]?.measured ?? 0).toFixed(1)})`);
    console.log(`poll plan / h: ${figures.plan.total.toFixed(0)} (ratio ${figures.plan.ratio.toFixed(3)}), measured ${figures.totalPerHour.toFixed(0)}: ${rows.join(', ')}\n`);
  }
  console.log(`simulated ${figures.simulatedHours.toFixed(2)} h in ${figures.wallSeconds.toFixed(0)} s wall time`);
  if (values.json) writeFileSync(values.json, `${JSON.stringify(figures, null, 2)}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  cellMain().catch((err: unknown) => {
    console.error('bench failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
