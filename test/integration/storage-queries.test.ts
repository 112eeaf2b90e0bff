/**
 * --storage.path keeps the saved queries' ledger (issue 33): after a restart with no rebuild since,
 * the new process sends no count and reads no field metadata, its first render holds
 * cmdb_query_records and cmdb_query_previous_records as before, and the next rebuild is counted
 * against what the earlier process counted (its counts become the previous ones). The whole
 * exporter in-process (start() as the daemon wires it, the scheduler's start-up polls, its cron
 * silent) against the real simulator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { CronLike } from '../../src/scheduler/scheduler.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { notYet, waitFor } from '../helpers/wait.js';
import { exampleQueries } from '../helpers/queries.js';

const NO_CRON: CronLike = { schedule: () => ({ stop: () => undefined }) };
const QUERIES = exampleQueries();

let sim: SimulatorServer;
let dir: string;
const apps: App[] = [];
/** The exporters' clock runs ahead by this (ms): a rebuild is counted once intervals.queries has passed since the last count. */
let ahead = 0;

beforeAll(async () => {
  sim = await startSimulator({ live: false, connectorPeriodSeconds: 86_400, size: { connectors: 10, actions: 3 } });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close(0)));
  rmSync(dir, { recursive: true, force: true });
});

async function run(): Promise<App> {
  const stack = stackFor(sim, { name: 'q', queries: QUERIES });
  const { app } = await startExporter(configFor([stack], { storagePath: dir }), { schedule: true, cron: NO_CRON, initialJitterMs: 0, nowMs: () => Date.now() + ahead });
  apps.push(app);
  return app;
}

/** Every endpoint of the stack polled by this process (its last poll after `since`, unix seconds) and ok. */
const polledSince = (app: App, since: number) => app.landing().stacks.every((s) => s.endpoints.every((e) => e.state === 'ok' && (e.lastPollAt ?? 0) >= since)) || undefined;
const notPolled = (app: App, since: number) => app.landing().stacks.flatMap((s) => s.endpoints.filter((e) => e.state !== 'ok' || (e.lastPollAt ?? 0) < since).map((e) => `${e.endpoint} ${e.state} ${e.lastPollAt}`));

const queryRequests = (from: number) => sim.requests().slice(from).filter((r) => r.endpoint === 'data_query' || r.endpoint === 'data_metadata');

function counts(text: string, family: string): Record<string, number | undefined> {
  const m = parseExposition(text);
  return Object.fromEntries(QUERIES.map((q) => [q.name, sampleValue(m, family, { stack: 'q', query: q.name })]));
}

describe('the saved queries across a restart with --storage.path', () => {
  it('asks nothing again without a rebuild, serves the counts and the previous counts, and counts the next rebuild against them', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-queries-'));
    const first = await run();
    await waitFor('the first process polled everything', () => polledSince(first, 0));
    sim.scenario.rebuild();
    ahead += 2 * 3600_000;
    await first.pollOnce();
    const before = await first.metricsText();
    const previous = counts(before, 'cmdb_query_previous_records');
    expect(Object.values(previous).every((v) => v !== undefined), 'a count before the rebuild for every query').toBe(true);
    await first.close();

    const from = sim.requests().length;
    const restartedAt = (Date.now() + ahead) / 1000;
    const second = await run();
    const firstRender = await second.metricsText();
    expect(counts(firstRender, 'cmdb_query_records')).toEqual(counts(before, 'cmdb_query_records'));
    expect(counts(firstRender, 'cmdb_query_previous_records')).toEqual(previous);
    // Its start-up polls, the queries' included, all done: none of them asked a count or the metadata.
    await waitFor('the second process polled every group', () => polledSince(second, restartedAt) || notYet(notPolled(second, restartedAt)));
    expect(queryRequests(from).map((r) => `${r.method} ${r.rawPath}`)).toEqual([]);
    const status = second.landing().stacks[0]?.queries ?? [];
    expect(status.map((q) => q.next)).toEqual(QUERIES.map(() => 'current'));
    expect(counts(await second.metricsText(), 'cmdb_query_previous_records')).toEqual(previous);

    // The next rebuild: one count per query and the metadata once per table, each against the count before the restart.
    sim.scenario.rebuild();
    ahead += 2 * 3600_000;
    await second.pollOnce();
    const after = await second.metricsText();
    expect(queryRequests(from).filter((r) => r.endpoint === 'data_query')).toHaveLength(QUERIES.length);
    expect(counts(after, 'cmdb_query_previous_records')).toEqual(counts(before, 'cmdb_query_records'));
  });
});
