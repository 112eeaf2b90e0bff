/**
 * Issue 37: a data query endpoint answering 503 for 90 s. The saved queries back off like any group
 * (the scheduler's retry, not a round after every connector poll) and every request of a count,
 * its client retries included, takes a slot of the queries' pacer: at most `queriesPerMinute`
 * data queries in any minute. Before: 48 requests in 49 s against a `queriesPerMinute` of 20.
 *
 * The real simulator and the real daemon (scheduler, client, pacer). The 90 s are the fault's
 * length, not a bound on the exporter: the test then waits for the event it needs (every query
 * counted again), bounded against a hang.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { RequestRecord } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { watchLag, type LagWatch } from '../helpers/lag.js';
import { exampleQueries } from '../helpers/queries.js';

const FAULT_MS = 90_000;
const PER_MINUTE = 20;

let sim: SimulatorServer | undefined;
let app: App | undefined;
let lag: LagWatch | undefined;
afterAll(async () => {
  lag?.stop();
  await app?.close(1000);
  await sim?.close();
});

/**
 * The most requests of `times` (ms, sorted) in any window of 60 s less `lagMs`: a request is logged
 * when it arrives, up to the event loop's longest stall (measured) after the pacer let it go.
 */
function mostInAMinute(times: readonly number[], lagMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while ((times[i] as number) - (times[j] as number) >= 60_000 - lagMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    lag = watchLag();
    ({ app } = await startExporter(configFor([stack]), { schedule: true, initialJitterMs: 100 }));
    const a = app;
    const counts = (): RequestRecord[] => s.requests().filter((r) => r.endpoint === 'data_query');
    const bound = Date.now() + 240_000;

    // The fault's 90 s start with the first count it answers.
    while (counts().length === 0 && Date.now() < bound) await sleep(200);
    const first = counts()[0];
    expect(first, 'a count was sent').toBeDefined();
    const faultEnd = (first as RequestRecord).at + FAULT_MS;
    while (Date.now() < faultEnd) await sleep(Math.min(1000, Math.max(1, faultEnd - Date.now())));
    const during = counts().map((r) => r.at);
    s.clearFaults();

    // Every query counted once the endpoint answers again (the group's retry, at most 2 minutes later).
    let m = parseExposition(await a.metricsText());
    const counted = () => queries.every((q) => sampleValue(m, 'cmdb_query_records', { query: q.name }) !== undefined);
    while (!(counted() && sampleValue(m, 'cmdb_endpoint_up', { endpoint: 'data_query' }) === 1) && Date.now() < bound) {
      await sleep(500);
      m = parseExposition(await a.metricsText());
    }
    const all = counts().map((r) => r.at);
    const lagMs = lag.maxMs();
    const most = mostInAMinute(all, lagMs);
    console.log(
      `data query 503 for 90 s: ${during.length} counts during the fault, most in any minute ${mostInAMinute(during, 0)}; ` +
        `${all.length} in all, most in any minute ${mostInAMinute(all, 0)} (${most} in 60 s less the ${lagMs.toFixed(0)} ms of measured event-loop stall; queriesPerMinute ${PER_MINUTE})`,
    );
    expect(during.length, 'the failing counts were retried').toBeGreaterThan(queries.length);
    expect(counted(), 'every query counted after the fault').toBe(true);
    expect(sampleValue(m, 'cmdb_endpoint_up', { endpoint: 'data_query' })).toBe(1);
    expect(most).toBeLessThanOrEqual(PER_MINUTE);
  });
});
