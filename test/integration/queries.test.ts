/**
 * Saved inventory queries through the whole exporter (in process, real simulator over loopback, a
 * shared fixed clock moved by the test): the example queries export exactly the brute-force counts
 * of the simulator's records, before and after a rebuild, with one request per query per rebuild
 * and none between.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { bruteForceCounts, exampleQueries } from '../helpers/queries.js';

const START = Date.parse('2026-03-10T12:00:00Z');
let clock = START;
const open: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close();
});

async function setup() {
  clock = START;
  const sim: SimulatorServer = await startSimulator({ now: () => clock, connectorPeriodSeconds: 86_400 });
  open.push(() => sim.close());
  const stack = stackFor(sim, { queries: exampleQueries(), track: { assets: [], users: [] } });
  const state = { config: configFor([stack]) };
  const { app, logText } = await startExporter(state.config, { nowMs: () => clock, loadConfig: () => state.config });
  open.push(() => app.close());
  return { sim, app, logText, stack, state };
}

async function counts(app: Awaited<ReturnType<typeof setup>>['app']): Promise<Record<string, number | undefined>> {
  const m = parseExposition(await app.metricsText());
  return Object.fromEntries(exampleQueries().map((q) => [q.name, sampleValue(m, 'cmdb_query_records', { query: q.name })]));
}

const queryRequests = (sim: SimulatorServer) => sim.requests().filter((r) => r.endpoint === 'data_query');

describe('saved queries, once per rebuild', () => {
  it('export the brute-force counts, ask once per query per rebuild and nothing between', async () => {
    const { sim, app } = await setup();
    await app.pollOnce();
    expect(await counts(app)).toEqual(bruteForceCounts(sim.dataset.records, clock));
    expect(queryRequests(sim)).toHaveLength(exampleQueries().length);

    // No rebuild: later polls send no count.
    clock += 3 * 3600_000;
    await app.pollOnce();
    expect(queryRequests(sim)).toHaveLength(exampleQueries().length);

    const before = await counts(app);
    sim.scenario.rebuild();
    clock += 60_000;
    await app.pollOnce();
    const after = bruteForceCounts(sim.dataset.records, clock);
    expect(await counts(app)).toEqual(after);
    expect(after, 'a rebuild changes the counts').not.toEqual(before);
    expect(queryRequests(sim)).toHaveLength(2 * exampleQueries().length);
    // The field metadata is read with the rebuilds too: once per table per rebuild.
    expect(sim.requests().filter((r) => r.endpoint === 'data_metadata')).toHaveLength(4);
    const m = parseExposition(await app.metricsText());
    const rebuilt = Math.floor(sim.dataset.records.asset.rebuiltAtMs / 1000);
    expect(sampleValue(m, 'cmdb_data_as_of_timestamp_seconds', {})).toBe(rebuilt);
    for (const q of exampleQueries()) expect(sampleValue(m, 'cmdb_query_data_as_of_timestamp_seconds', { query: q.name })).toBe(rebuilt);
  });
});

describe('saved queries across a reload that keeps the stack\'s road', () => {
  it('keep their counts, rebuild and counts before, ask nothing again, and count only the query the reload changed', async () => {
    const { sim, app, stack, state } = await setup();
    await app.pollOnce();
    // A rebuild past intervals.queries (1h): each query counted again, with the count before.
    clock += 3 * 3600_000;
    sim.scenario.rebuild();
    clock += 60_000;
    await app.pollOnce();
    const n = exampleQueries().length;
    expect(queryRequests(sim)).toHaveLength(2 * n);
    const series = (text: string) => text.split('\n').filter((l) => /^cmdb_(query_|data_as_of)/.test(l));
    const before = series(await app.metricsText());
    expect(before.filter((l) => l.startsWith('cmdb_query_previous_records'))).toHaveLength(n);

    // Another interval and pace: the same road, taken in place (no restart).
    state.config = configFor([{ ...stack, queriesPerMinute: 30, intervals: { ...stack.intervals, inventory: 600 } }]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"reconfigured":1') });
    clock += 60_000;
    await app.pollOnce();
    expect(queryRequests(sim), 'nothing asked again').toHaveLength(2 * n);
    expect(series(await app.metricsText())).toEqual(before);

    // One query changed: only it is counted again, as a new query (no count before); the others keep theirs.
    const [first, ...rest] = exampleQueries();
    if (first === undefined) throw new Error('no example query');
    const changed = { ...first, table: 'asset' as const, query: [[{ searchFieldName: 'Asset_Type', operator: '==', value: 'Server' }]] };
    state.config = configFor([{ ...stack, queries: [changed, ...rest] }]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"reconfigured":1') });
    clock += 60_000;
    await app.pollOnce();
    expect(queryRequests(sim)).toHaveLength(2 * n + 1);
    const m = parseExposition(await app.metricsText());
    expect(sampleValue(m, 'cmdb_query_records', { query: changed.name })).toBe(sim.dataset.records.asset.records().filter((r) => r.Asset_Type === 'Server').length);
    expect(sampleValue(m, 'cmdb_query_previous_records', { query: changed.name })).toBeUndefined();
    for (const q of rest) expect(sampleValue(m, 'cmdb_query_previous_records', { query: q.name })).toBeDefined();
  });
});
