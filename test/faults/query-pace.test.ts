/**
 * Issue 37: a data query endpoint answering 503 for 90 s. The saved queries back off like any group
 * (the scheduler's retry, not a round after every connector poll) and every request of a count,
 * its client retries included, takes a slot of the queries' pacer: at most `queriesPerMinute`
 * data queries in any minute. Before: 48 requests in 49 s against a `queriesPerMinute` of 20.
 *
 * The real simulator and the real daemon (scheduler, client, pacer). The 90 s are the fault's
 * length (the scenario), not a bound on the exporter: the test then waits for the event it needs
 * (every query counted again), bounded against a hang. The pace is checked by the pacer's slots as
 * it gave them (RoadEvents.paced), not by when the requests arrived: every data query that reached
 * the simulator took a slot, and no 60 s hold more slots than queriesPerMinute.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { RequestRecord } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { exampleQueries } from '../helpers/queries.js';
import { notYet, waitFor } from '../helpers/wait.js';
import { busiestMinute } from './matrix.js';

const FAULT_MS = 90_000;
const PER_MINUTE = 20;

let sim: SimulatorServer | undefined;
let app: App | undefined;
afterAll(async () => {
  await app?.close(1000);
  await sim?.close();
});

describe('a data query endpoint answering 503 for 90 s', () => {
  it('draws at most queriesPerMinute data queries in any minute, and every query is counted once it answers', { timeout: 360_000 }, async () => {
    sim = await startSimulator({ connectorPeriodSeconds: 86_400 });
    const s = sim;
    s.addFault({ endpoint: 'data_query', status: 503 });
    const queries = exampleQueries();
    const stack = stackFor(s, {
      queries,
      track: { assets: [], users: [] },
      rateLimitPerMinute: 600,
      queriesPerMinute: PER_MINUTE,
      retries: { max: 3, minDelaySeconds: 0.5, maxDelaySeconds: 5, maxRetryAfterSeconds: 60 },
      intervals: { inventory: 10, license: 10, connectors: 10, ingestion: 10, actions: 10, actionJobs: 10, actionJobsRefresh: 3600, changes: 10, queries: 3600 },
    });
    const slots: number[] = [];
    ({ app } = await startExporter(configFor([stack]), { schedule: true, initialJitterMs: 100, onRoad: (_s, events) => events.paced.on((e) => slots.push(e.slotAt)) }));
    const a = app;
    const counts = (): RequestRecord[] => s.requests().filter((r) => r.endpoint === 'data_query');

    // The fault's 90 s start with the first count it answers.
    const first = await waitFor('the first count sent', () => counts()[0], { timeoutMs: 240_000 });
    await new Promise((r) => setTimeout(r, Math.max(0, first.at + FAULT_MS - Date.now())));
    const during = counts().length;
    s.clearFaults();

    // Every query counted once the endpoint answers again (the group's retry, at most 2 minutes later).
    let m = parseExposition(await a.metricsText());
    const counted = () => queries.every((q) => sampleValue(m, 'cmdb_query_records', { query: q.name }) !== undefined);
    await waitFor(
      'every query counted and data_query up after the fault',
      async () => {
        m = parseExposition(await a.metricsText());
        const upNow = sampleValue(m, 'cmdb_endpoint_up', { endpoint: 'data_query' });
        return (counted() && upNow === 1) || notYet({ counted: queries.filter((q) => sampleValue(m, 'cmdb_query_records', { query: q.name }) !== undefined).length, of: queries.length, up: upNow });
      },
      { timeoutMs: 240_000, intervalMs: 500 },
    );
    // Read after the log: a slot is taken before its request leaves.
    const arrived = counts().length;
    const taken = [...slots];
    const most = busiestMinute(taken);
    console.log(`data query 503 for 90 s: ${during} counts during the fault; ${arrived} in all, ${taken.length} slots of the pacer taken, most slots in any minute ${most} (queriesPerMinute ${PER_MINUTE})`);
    expect(during, 'the failing counts were retried').toBeGreaterThan(queries.length);
    expect(arrived, 'data queries that reached the CMDB, each with a slot of the pacer').toBeLessThanOrEqual(taken.length);
    expect(most, 'slots of the pacer in any 60 s').toBeLessThanOrEqual(PER_MINUTE);
  });
});
