/**
 * The saved-queries cell: "one request per query per rebuild, none between", measured. The daemon's
 * road (client and readers), poller and scheduler (built-in defaults: connectors every 5 min, intervals.queries 1h)
 * poll the simulator in simulated time with the worked example queries, while the simulator's
 * mergers rebuild the data on a cadence; figures come from the simulator's request log (what
 * reached the CMDB) and its merger rows (the rebuilds).
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { Registry } from 'prom-client';
import type { GroupName } from '../src/api/endpoints.js';
import type { SavedQuery } from '../src/api/query.js';
import { parseSavedQueries } from '../src/api/query-shape.js';
import { createDispatcher } from '../src/cmdb/dispatcher.js';
import { openRoad } from '../src/cmdb/road.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { StackConfig } from '../src/config/types.js';
import { createLogger } from '../src/logger.js';
import { createInstruments } from '../src/metrics/instruments.js';
import { nextScheduledRun, Scheduler } from '../src/scheduler/scheduler.js';
import { enabledEndpoints, pollSettings } from '../src/config/endpoints.js';
import { StackPoller } from '../src/scheduler/stack-poller.js';
import { SecretScrubber } from '../src/secrets.js';
import type { RequestRecord } from '../src/simulator/api.js';
import { startSimulator } from '../src/simulator/server.js';
import { SnapshotStore } from '../src/store/snapshot-store.js';
import { count, markdownTable, textTable, type Table } from './format.js';
import type { Progress, QueriesFigures, QueriesRun } from './results.js';
import { countingDispatcher, settle, VirtualTime } from './virtual-time.js';

/** The worked examples of config/exporter.example.yaml (its first stack), as the configuration loads them. */
export function exampleQueries(): SavedQuery[] {
  const doc = parse(readFileSync(new URL('../config/exporter.example.yaml', import.meta.url), 'utf8')) as { stacks: Array<{ queries?: unknown }> };
  const parsed = parseSavedQueries(doc.stacks[0]?.queries);
  if (!parsed.ok) throw new Error(`the example queries do not parse: ${parsed.message}`);
  return parsed.value;
}

const START_MS = Date.parse('2026-11-21T12:00:00Z');
const MERGER_TABLE: Readonly<Record<string, 'asset' | 'user'>> = { 'Lucidum Asset Merger': 'asset', 'Lucidum User Merger': 'user' };
/** Enough connectors for both mergers (the 7th and the 16th template). */
const CONNECTORS = 16;

export interface QueriesOptions {
  readonly hours: number;
  /** Seconds between two runs of each merger (and every connector). */
  readonly cadences: readonly number[];
  readonly maxWallSeconds: number;
}

export const QUERIES_DEFAULTS: QueriesOptions = { hours: 24, cadences: [4 * 3600, 600], maxWallSeconds: 600 };

/** The table a count was for, and which query (by its criteria), from the request body. */
function keyOf(body: unknown): string {
  const b = body as { table?: string; query?: Array<Array<{ searchFieldName?: string; operator?: string }>> };
  return JSON.stringify([b.table, (b.query ?? []).map((g) => g.map((c) => `${c.searchFieldName} ${c.operator}`))]);
}

/** Counts per query between the rebuilds of its table: the most in one interval, and those with no rebuild since the query's count before. */
function spacing(queries: readonly SavedQuery[], log: readonly RequestRecord[], rebuildsOf: (table: 'asset' | 'user') => number[]) {
  let most = 0;
  let without = 0;
  for (const q of queries) {
    const key = keyOf(q);
    const times = log.filter((r) => r.endpoint === 'data_query' && keyOf(JSON.parse(r.body ?? '{}')) === key).map((r) => r.at);
    const rebuilds = rebuildsOf(q.table);
    const intervalOf = (t: number) => rebuilds.filter((r) => r <= t).length;
    const per = new Map<number, number>();
    for (const t of times) per.set(intervalOf(t), (per.get(intervalOf(t)) ?? 0) + 1);
    most = Math.max(most, ...per.values());
    without += [...per.values()].reduce((n, c) => n + c - 1, 0);
  }
  return { most, without };
}

async function runCadence(cadenceSeconds: number, opts: QueriesOptions, progress: Progress): Promise<QueriesRun> {
  const time = new VirtualTime(START_MS);
  const sim = await startSimulator({ host: '127.0.0.1', port: 0, seed: 42, size: { connectors: CONNECTORS }, live: false, now: () => START_MS, connectorPeriodSeconds: cadenceSeconds });
  const queries = exampleQueries();
  const stack: StackConfig = {
    ...BUILTIN_SETTINGS,
    name: 'bench',
    baseUrl: sim.url,
    auth: { kind: 'client', clientId: sim.clientId, secret: sim.secret, clientIdKey: 'clientID' },
    tls: { insecureSkipVerify: false },
    queries,
  };
  const instruments = createInstruments(new Registry(), { defaultMetrics: false });
  const scrubber = new SecretScrubber();
  const logger = createLogger({ level: 'silent', format: 'json', scrubber });
  const store = new SnapshotStore({ instruments, logger });
  store.addStack(stack.name, new Map(enabledEndpoints(stack).map((e) => [e, { intervalSeconds: 60, staleAfterSeconds: 86_400 }])), 100_000);
  const { dispatcher, inFlight } = countingDispatcher(createDispatcher(stack));
  const road = openRoad({ stack, instruments, logger, scrubber, clock: time, dispatcher, enabled: enabledEndpoints(stack) });
  const poller = new StackPoller({ stack, settings: pollSettings(stack), api: road.readers, store, logger, scrubber, now: () => time.now() / 1000, sleep: (ms, signal) => time.sleep(ms, signal) });
  const groupOf = (name: string) => name.slice(name.indexOf('/') + 1) as GroupName;
  const cron = time.cron((name, nowMs) => 1000 * nextScheduledRun(stack.name, groupOf(name), stack.intervals[groupOf(name)], nowMs / 1000));
  const scheduler = new Scheduler({ instruments, logger, cron, initialJitterMs: 0, nowMs: () => time.now() });
  const endMs = START_MS + opts.hours * 3_600_000;
  // The history keeps a few runs per merger: its rows are noted as time moves, not read at the end.
  const seen = { asset: new Set<number>(), user: new Set<number>() };
  const noteRebuilds = () => {
    for (const r of sim.dataset.history.all()) {
      const table = MERGER_TABLE[r.bridge_name];
      // A rebuild: a merger run that did not fail (the simulator's and the exporter's rule), inside the window.
      if (table && /^(SUCCESS|WARNING)$/i.test(r.status) && r._time * 1000 > START_MS) seen[table].add(r._time * 1000);
    }
  };
  const wallStart = performance.now();
  try {
    scheduler.add(poller);
    while (time.now() < endMs && performance.now() - wallStart < opts.maxWallSeconds * 1000) {
      await settle(time, inFlight);
      const next = time.next();
      if (next === undefined) break;
      const to = Math.min(next, endMs);
      sim.scenario.advance((to - time.now()) / 1000);
      noteRebuilds();
      time.advance(to);
    }
    await settle(time, inFlight);
  } finally {
    await scheduler.stop(0);
    await road.close();
    await sim.close();
  }
  const log = sim.requests();
  const rebuildsOf = (table: 'asset' | 'user') => [...seen[table]].sort((a, b) => a - b);
  const { most, without } = spacing(queries, log, rebuildsOf);
  const run: QueriesRun = {
    cadenceSeconds,
    simulatedHours: (time.now() - START_MS) / 3_600_000,
    queries: queries.length,
    rebuilds: { asset: rebuildsOf('asset').length, user: rebuildsOf('user').length },
    counts: log.filter((r) => r.endpoint === 'data_query').length,
    metadataReads: log.filter((r) => r.endpoint === 'data_metadata').length,
    maxCountsBetweenRebuilds: most,
    countsWithoutRebuild: without,
    connectorPolls: log.filter((r) => r.endpoint === 'connector').length,
    wallSeconds: (performance.now() - wallStart) / 1000,
  };
  progress(`[queries] mergers every ${cadenceSeconds / 60} min: ${run.counts} counts over ${run.simulatedHours.toFixed(1)} simulated h`);
  return run;
}

export async function measureQueries(opts: QueriesOptions, progress: Progress): Promise<QueriesFigures> {
  const runs: QueriesRun[] = [];
  for (const cadence of opts.cadences) runs.push(await runCadence(cadence, opts, progress));
  return { runs };
}

const minutes = (s: number) => (s >= 3600 ? `${s / 3600} h` : `${s / 60} min`);

export function queriesTable(f: QueriesFigures): Table {
  return {
    title: 'Saved queries over simulated days: requests from the simulator\'s request log',
    head: ['mergers rebuild every', 'simulated hours', 'queries', 'rebuilds (asset / user)', 'counts sent', 'most counts of a query between two rebuilds', 'counts without a rebuild since', 'metadata reads', 'counting at every connector poll'],
    rows: f.runs.map((r) => [
      minutes(r.cadenceSeconds),
      r.simulatedHours.toFixed(0),
      count(r.queries),
      `${r.rebuilds.asset} / ${r.rebuilds.user}`,
      count(r.counts),
      count(r.maxCountsBetweenRebuilds),
      count(r.countsWithoutRebuild),
      count(r.metadataReads),
      count(r.connectorPolls * r.queries),
    ]),
    numericFrom: 1,
  };
}

export const QUERIES_START = '<!-- queries:start -->';
export const QUERIES_END = '<!-- queries:end -->';

/** The section of docs/performance.md, between its markers. */
export function queriesSection(f: QueriesFigures, table: (t: Table) => string = markdownTable): string {
  return [
    QUERIES_START,
    '## Saved queries: one request per query per rebuild\n',
    `The worked example queries (config/exporter.example.yaml, ${f.runs[0]?.queries ?? 4} queries over both tables) with the built-in defaults (connectors polled every 5 min, \`intervals.queries\` 1 h), the daemon's road (client and readers), poller and scheduler in simulated time against the simulator, whose mergers rebuild the asset and user records on a cadence: every 4 h (the real service's fastest) and every 10 min (faster than any real stack, to show the \`intervals.queries\` cap). Counted from the simulator's request log; rebuilds from its merger rows. Run alone with \`npm run bench -- --only queries --write\`.\n`,
    `${queriesTable(f).title}:\n`,
    table(queriesTable(f)),
    '',
    'Each query is counted once at start and once after each rebuild of its table, and not between: "counts without a rebuild since" is 0. Where the mergers move faster than `intervals.queries`, rebuilds within the hour wait for it: at most one count per query an hour. The last column is what counting at every connector poll would have sent.',
    QUERIES_END,
    '',
  ].join('\n');
}

async function cellMain(): Promise<void> {
  const figures = await measureQueries(QUERIES_DEFAULTS, (m) => console.error(`bench: ${m}`));
  console.log(textTable(queriesTable(figures)));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  cellMain().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
