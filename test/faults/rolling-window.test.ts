/**
 * Issue 25: at rateLimitPerMinute 60 (the real service's limit) a CMDB that counts arrivals in any
 * rolling 60 s refuses nothing, however busy the intervals keep the budget. Before, the budget
 * planned its minute from the reservations rather than from when requests really left: the
 * simulator refused 2 requests in 200 s on a quiet machine, 4 under load.
 *
 * Real time, ten minutes: the real simulator's rolling-minute limit (refusals with Retry-After),
 * the real daemon (scheduler, budget, transport) on intervals whose demand is above 60 a minute.
 * It runs in the fault suite, beside the other fault files.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';

const MINUTES = Number(process.env.ROLLING_WINDOW_MINUTES ?? 10);

let sim: SimulatorServer | undefined;
let app: App | undefined;
afterAll(async () => {
  await app?.close(1000);
  await sim?.close();
});

describe('the request budget and a server counting any rolling 60 s', () => {
  it(`refuses nothing in ${MINUTES} minutes of busy intervals at rateLimitPerMinute 60`, { timeout: MINUTES * 60_000 + 120_000 }, async () => {
    sim = await startSimulator({ live: true, size: { actions: 12, trackedAssets: 4, trackedUsers: 3 } });
    sim.setRateLimit({ perMinute: 60, retryAfter: true });
    // Every group every 10 s: about 100 requests a minute asked of a budget of 60.
    const i = 10;
    const stack = stackFor(sim, {
      rateLimitPerMinute: 60,
      actionJobsPerMinute: 60,
      retries: { max: 3, minDelaySeconds: 0.5, maxDelaySeconds: 5, maxRetryAfterSeconds: 60 },
      intervals: { inventory: i, license: i, connectors: i, ingestion: i, actions: i, actionJobs: i, actionJobsRefresh: 60, changes: i, queries: 3600 },
    });
    ({ app } = await startExporter(configFor([stack]), { schedule: true, initialJitterMs: 100 }));
    const started = Date.now();
    // Bounded by time only: the claim is about every minute of the run.
    while (Date.now() - started < MINUTES * 60_000) await new Promise((r) => setTimeout(r, 1000));
    const requests = sim.requests().filter((r) => r.endpoint !== null);
    const refused = requests.filter((r) => r.status === 429);
    const admitted = requests.filter((r) => r.status !== 429).map((r) => r.at);
    // Busy: the budget was the limit for the whole run (at least 90% of it spent).
    expect(admitted.length).toBeGreaterThanOrEqual(Math.floor(MINUTES * 60 * 0.9));
    expect(refused.map((r) => new Date(r.at).toISOString())).toEqual([]);
  });
});
