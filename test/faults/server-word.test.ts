/**
 * Issue 22, the server's word honoured, against the real simulator and the real daemon (scheduler,
 * poll deadlines, client): a Retry-After on a 503 is waited out before each retry and the license
 * comes back in the same poll; a Retry-After HTTP-date from a CMDB whose clock is 10 minutes off is
 * read against its Date header. (The doubling pause after 429s without Retry-After: test/cmdb/client-retry.test.ts.)
 * The gaps between attempts are read from the simulator's log as lower bounds (the wait asked for
 * was waited, whatever the machine's speed); that the license came back within the same poll is read
 * from the exporter's request events (the 200 is a retry of the first request, not a later poll),
 * not from an upper bound on the wall clock. Every wait is for an event, bounded against a hang.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { startSimulator } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import type { RequestEvent } from '../../src/cmdb/events.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { notYet, waitFor } from '../helpers/wait.js';

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

async function daemon(sim: SimulatorServer, retries: { max: number; minDelaySeconds: number; maxDelaySeconds: number; maxRetryAfterSeconds: number }): Promise<{ app: App; attempts: () => number[] }> {
  const stack = stackFor(sim, {
    name: 'word',
    rateLimitPerMinute: 600,
    retries,
    // The license polled every 2 minutes: its poll has the time to wait what the server asks.
    intervals: { inventory: 120, license: 120, connectors: 120, ingestion: 120, actions: 120, actionJobs: 120, actionJobsRefresh: 3600, changes: 120, queries: 120 },
  });
  const events: RequestEvent[] = [];
  const { app } = await startExporter(configFor([stack]), { serve: false, schedule: true, initialJitterMs: 0, onRoad: (_s, road) => road.requests.on((e) => events.push(e)) });
  open.push(() => app.close(1000));
  // Of each license request: 1 for the first attempt of a request, 2 for its first retry, …
  return { app, attempts: () => events.filter((e) => e.endpoint === 'license').map((e) => e.attempt) };
}

/** Until the license reads up (0 from the start, before the first poll has finished: its outcome is the event). */
async function licenseUp(app: App): Promise<void> {
  await waitFor('the license up', async () => {
    const up = sampleValue(parseExposition(await app.metricsText()), 'cmdb_endpoint_up', { endpoint: 'license' });
    return up === 1 || notYet({ up });
  });
}

const gaps = (at: readonly number[]) => at.slice(1).map((t, i) => t - (at[i] as number));

describe('the server\'s word, against the real simulator', () => {
  it('waits the Retry-After of a 503 before each retry, and the license is up after its first poll', async () => {
    const sim = await startSimulator({});
    open.push(() => sim.close());
    sim.addFault({ endpoint: 'license', status: 503, retryAfterSeconds: 3, times: 2 });
    const { app, attempts } = await daemon(sim, { max: 3, minDelaySeconds: 0.1, maxDelaySeconds: 0.5, maxRetryAfterSeconds: 60 });
    await licenseUp(app);
    const license = sim.requests().filter((r) => r.endpoint === 'license');
    expect(license.map((r) => r.status)).toEqual([503, 503, 200]);
    // One request and its two retries: up again at its first poll, not at a later one.
    expect(attempts()).toEqual([1, 2, 3]);
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
    const { app, attempts } = await daemon(sim, { max: 3, minDelaySeconds: 0.1, maxDelaySeconds: 0.5, maxRetryAfterSeconds: 60 });
    await licenseUp(app);
    const license = sim.requests().filter((r) => r.endpoint === 'license');
    expect(license.map((r) => r.status)).toEqual([429, 200]);
    // Ahead: read as 603 s it was above maxRetryAfterSeconds and failed (the 200 came with a later
    // poll, a first attempt again); behind: retried at once, without the wait.
    expect(attempts()).toEqual([1, 2]);
    const [gap] = gaps(license.map((r) => r.at));
    expect(gap).toBeGreaterThanOrEqual(1_900);
  });
});
