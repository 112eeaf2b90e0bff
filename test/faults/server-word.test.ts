/**
 * Issue 22, the server's word honoured, against the real simulator and the real daemon (scheduler,
 * poll deadlines, client): a Retry-After on a 503 is waited out before each retry and the license
 * comes back in the same poll; a Retry-After HTTP-date from a CMDB whose clock is 10 minutes off is
 * read against its Date header. (The doubling pause after 429s without Retry-After: test/cmdb/client-retry.test.ts.)
 * Times are the simulator's request log (real time), bounded by events with generous limits.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { startSimulator } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

async function daemon(sim: SimulatorServer, retries: { max: number; minDelaySeconds: number; maxDelaySeconds: number; maxRetryAfterSeconds: number }): Promise<App> {
  const stack = stackFor(sim, {
    name: 'word',
    rateLimitPerMinute: 600,
    retries,
    // The license polled every 2 minutes: its poll has the time to wait what the server asks.
    intervals: { inventory: 120, license: 120, connectors: 120, ingestion: 120, actions: 120, actionJobs: 120, actionJobsRefresh: 3600, changes: 120, queries: 120 },
  });
  const { app } = await startExporter(configFor([stack]), { serve: false, schedule: true, initialJitterMs: 0 });
  open.push(() => app.close(1000));
  return app;
}

async function licenseUp(app: App, ms: number): Promise<number | undefined> {
  const started = Date.now();
  for (;;) {
    const up = sampleValue(parseExposition(await app.metricsText()), 'cmdb_endpoint_up', { endpoint: 'license' });
    // 0 from the start (before the first poll has finished): wait for the poll's outcome.
    if (up === 1 || Date.now() - started > ms) return up;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const gaps = (at: readonly number[]) => at.slice(1).map((t, i) => t - (at[i] as number));

describe('the server\'s word, against the real simulator', () => {
  it('waits the Retry-After of a 503 before each retry, and the license is up after its first poll', async () => {
    const sim = await startSimulator({});
    open.push(() => sim.close());
    sim.addFault({ endpoint: 'license', status: 503, retryAfterSeconds: 3, times: 2 });
    const app = await daemon(sim, { max: 3, minDelaySeconds: 0.1, maxDelaySeconds: 0.5, maxRetryAfterSeconds: 60 });
    expect(await licenseUp(app, 30_000)).toBe(1);
    const license = sim.requests().filter((r) => r.endpoint === 'license');
    expect(license.map((r) => r.status)).toEqual([503, 503, 200]);
    // Before: the back-off (0.1–0.5 s here) alone spaced the attempts.
    for (const gap of gaps(license.map((r) => r.at))) expect(gap).toBeGreaterThanOrEqual(2_900);
  });

  it.each([
    ['ahead', 600_000],
    ['behind', -600_000],
  ])('reads a Retry-After date of a CMDB clock 10 min %s against its Date header', async (_n, skewMs) => {
    const sim = await startSimulator({ now: () => Date.now() + skewMs });
    open.push(() => sim.close());
    sim.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 3, retryAfterDate: true, times: 1 });
    const app = await daemon(sim, { max: 3, minDelaySeconds: 0.1, maxDelaySeconds: 0.5, maxRetryAfterSeconds: 60 });
    expect(await licenseUp(app, 30_000)).toBe(1);
    const license = sim.requests().filter((r) => r.endpoint === 'license');
    expect(license.map((r) => r.status)).toEqual([429, 200]);
    // Ahead: read as 603 s it was above maxRetryAfterSeconds and failed; behind: retried at once.
    const [gap] = gaps(license.map((r) => r.at));
    expect(gap).toBeGreaterThanOrEqual(1_900);
    expect(gap).toBeLessThan(30_000);
  });
});
