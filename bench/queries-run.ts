/**
 * The saved-queries cell: "one request per query per rebuild, none between", measured. The daemon's
 * road (client and readers), poller and scheduler (built-in defaults: connectors every 5 min, intervals.queries 1h)
 * poll the simulator in simulated time with the worked example queries, while the simulator's
 * mergers rebuild the data on a cadence; figures come from the simulator's request log (what
 * reached the CMDB) and its merger rows (the rebuilds).
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { SavedQuery } from '../src/api/query.js';
import { parseSavedQueries } from '../src/api/query-shape.js';
import type { RequestRecord } from '../src/simulator/api.js';
import { count, type Table } from './format.js';
import type { Progress } from './results.js';
import { CLOCK_MS } from './simulator-process.js';
import { simulatedStack } from './virtual-time.js';

/** The worked examples of config/exporter.example.yaml (its first stack), as the configuration loads them. */
export function exampleQueries(): SavedQuery[] {
  const doc = parse(readFileSync(new URL('../config/exporter.example.yaml', import.meta.url), 'utf8')) as { stacks: Array<{ queries?: unknown }> };
  const parsed = parseSavedQueries(doc.stacks[0]?.queries);
  if (!parsed.ok) throw new Error(`the example queries do not parse: ${parsed.message}`);
  return parsed.value;
}

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

async function runCadence(cadenceSeconds: number, opts: QueriesOptions, progress: Progress) {
  const queries = exampleQueries();
  const { sim, time, run: simulate, close } = await simulatedStack({
    startMs: CLOCK_MS,
    size: { connectors: CONNECTORS },
    connectorPeriodSeconds: cadenceSeconds,
    stack: () => ({ queries }),
    staleAfterSeconds: 86_400,
    maxSeries: 100_000,
  });
  // The history keeps a few runs per merger: its rows are noted as time moves, not read at the end.
  const seen = { asset: new Set<number>(), user: new Set<number>() };
  const noteRebuilds = () => {
    for (const r of sim.dataset.history.all()) {
      const table = MERGER_TABLE[r.bridge_name];
      // A rebuild: a merger run that did not fail (the simulator's and the exporter's rule), inside the window.
      if (table && /^(SUCCESS|WARNING)$/i.test(r.status) && r._time * 1000 > CLOCK_MS) seen[table].add(r._time * 1000);
    }
  };
  const wallStart = performance.now();
  try {
    await simulate(CLOCK_MS + opts.hours * 3_600_000, opts.maxWallSeconds, { moved: noteRebuilds });
  } finally {
    await close();
  }
  const log = sim.requests();
  const rebuildsOf = (table: 'asset' | 'user') => [...seen[table]].sort((a, b) => a - b);
  const { most, without } = spacing(queries, log, rebuildsOf);
  const run = {
    cadenceSeconds,
    simulatedHours: (time.now() - CLOCK_MS) / 3_600_000,
    queries: queries.length,
    // Merger runs that did not fail in the window, the start not counted.
    rebuilds: { asset: rebuildsOf('asset').length, user: rebuildsOf('user').length },
    // POST /CMDB/v2/data/cmdb.
    counts: log.filter((r) => r.endpoint === 'data_query').length,
    metadataReads: log.filter((r) => r.endpoint === 'data_metadata').length,
    // The most counts of one query between two rebuilds of its table (1: once per rebuild), and
    // those with no rebuild since the query's count before (the daily run included).
    maxCountsBetweenRebuilds: most,
    countsWithoutRebuild: without,
    // What counting at every connector poll would have sent, per query.
    connectorPolls: log.filter((r) => r.endpoint === 'connector').length,
    wallSeconds: (performance.now() - wallStart) / 1000,
  };
  progress(`[queries] mergers every ${cadenceSeconds / 60} min: ${run.counts} counts over ${run.simulatedHours.toFixed(1)} simulated h`);
  return run;
}

export async function measureQueries(opts: QueriesOptions, progress: Progress) {
  const runs = [];
  for (const cadence of opts.cadences) runs.push(await runCadence(cadence, opts, progress));
  return { runs };
}

const minutes = (s: number) => (s >= 3600 ? `${s / 3600} h` : `${s / 60} min`);

export function queriesTable(f: Awaited<ReturnType<typeof measureQueries>>): Table {
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
