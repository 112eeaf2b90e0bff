/**
 * Saved inventory queries end to end: the BUILT exporter as a child process, the simulator in
 * process (so the test can rebuild its data and count its records). The example queries of
 * config/exporter.example.yaml export exactly what a brute-force count over the simulator's records
 * gives, before and after a rebuild; the simulator's request log holds one count per query per
 * rebuild and none between rebuilds, while the connector history is polled every 10 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { bruteForceCounts, exampleQueries } from '../helpers/queries.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { stopAllAndCheck } from './harness/processes.js';
import { http, makeTempDir, removeDir } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'e2e-queries';
const QUERIES = exampleQueries();

let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;

beforeAll(async () => {
  dir = makeTempDir('queries');
  // Not live, connectors once a day: the data is rebuilt only when the test says so.
  sim = await startSimulator({ live: false, connectorPeriodSeconds: 86_400 });
  const configFile = writeExporterConfig(dir, {
    stacks: [
      {
        name: STACK,
        baseUrl: sim.url,
        clientId: sim.clientId,
        secret: sim.secret,
        rateLimitPerMinute: 6000,
        intervals: FAST_INTERVALS,
        queries: QUERIES,
      },
    ],
  });
  exporter = await startExporter({ args: ['--config', configFile], env: {} });
  await waitUntilReady(exporter);
});

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

interface Counted {
  readonly records: Record<string, number | undefined>;
  /** When the exporter counted (its clock, ms): the day the relative values were resolved in. */
  readonly ranAtMs: number;
  readonly rebuiltAt: ReadonlySet<number | undefined>;
}

async function counted(): Promise<Counted> {
  const m = parseExposition((await http(`${exporter.url}/metrics`)).text);
  const per = (name: string) => QUERIES.map((q) => sampleValue(m, name, { stack: STACK, query: q.name }));
  return {
    records: Object.fromEntries(QUERIES.map((q, i) => [q.name, per('cmdb_query_records')[i]])),
    ranAtMs: Math.max(...per('cmdb_query_last_run_timestamp_seconds').map((t) => t ?? 0)) * 1000,
    rebuiltAt: new Set(per('cmdb_query_data_as_of_timestamp_seconds')),
  };
}

const counts = () => sim.requests().filter((r) => r.endpoint === 'data_query');
const connectorPolls = () => sim.requests().filter((r) => r.endpoint === 'connector').length;

/** Waits for `polls` more polls of the connector history (each followed by a poll of the queries): rebuilds would be seen there. */
async function connectorPollsPass(polls: number): Promise<void> {
  const target = connectorPolls() + polls;
  await waitFor(`${polls} more connector polls`, async () => (connectorPolls() >= target ? done(undefined) : notYet(connectorPolls())), {
    timeoutMs: 90_000,
    intervalMs: 500,
  });
}

/** Waits until every example query was counted against the table rebuild `rebuiltAtMs`. */
async function countedAgainst(rebuiltAtMs: number): Promise<Counted> {
  return waitFor(
    'every example query counted against the newest rebuild',
    async () => {
      const c = await counted();
      const all = [...c.rebuiltAt].every((t) => t !== undefined && t * 1000 >= Math.floor(rebuiltAtMs / 1000) * 1000);
      return all && Object.values(c.records).every((v) => v !== undefined) ? done(c) : notYet(c);
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}

describe('the example queries against the simulator', () => {
  it('export the brute-force counts at start, and send nothing while the data is not rebuilt', async () => {
    const first = await countedAgainst(sim.dataset.records.asset.rebuiltAtMs);
    expect(first.records).toEqual(bruteForceCounts(sim.dataset.records, first.ranAtMs));
    expect(Object.values(first.records).some((n) => (n ?? 0) > 0)).toBe(true);
    expect(counts()).toHaveLength(QUERIES.length);
    expect(new Set(counts().map((r) => JSON.parse(r.body ?? '{}').query)).size).toBe(QUERIES.length);

    await connectorPollsPass(3);
    expect(counts(), 'no rebuild: no count sent').toHaveLength(QUERIES.length);
  });

  it('count once more after a rebuild, exactly as the brute force does, and then send nothing again', async () => {
    const before = await counted();
    sim.scenario.rebuild();
    const after = await countedAgainst(sim.dataset.records.asset.rebuiltAtMs);
    const expected = bruteForceCounts(sim.dataset.records, after.ranAtMs);
    expect(after.records).toEqual(expected);
    expect(after.records, 'the rebuild changed the counts').not.toEqual(before.records);
    expect(counts()).toHaveLength(2 * QUERIES.length);
    // The field metadata is read with each rebuild: once per table, not once per query.
    expect(sim.requests().filter((r) => r.endpoint === 'data_metadata')).toHaveLength(4);

    await connectorPollsPass(3);
    expect(counts(), 'no rebuild since: no count sent').toHaveLength(2 * QUERIES.length);
    expect((await counted()).records).toEqual(expected);
  });
});
