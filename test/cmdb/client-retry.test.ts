/** Retries, Retry-After, the stack's rate budget, timeouts and aborts, against the simulator. */
import { describe, expect, it } from 'vitest';
import {
  CmdbAbortedError,
  CmdbHttpError,
  CmdbRateLimitedError,
  CmdbTimeoutError,
} from '../../src/errors.js';
import { realClock } from '../../src/cmdb/clock.js';
import type { RequestContext } from '../../src/api/request-context.js';
import { MAX_REFUSALS } from '../../src/cmdb/policy.js';
import { makeClient, rejection } from './helpers/client.js';
import { FakeClock } from './helpers/clock.js';
import { requestsTo, sim, simStack } from './helpers/sim.js';

/** What the requests of a poll whose deadline is `ms` from now carry (as the scheduler's poll bound gives it). */
function pollSignal(clock: FakeClock, ms: number): RequestContext {
  return { signal: new AbortController().signal, deadline: clock.now() + ms };
}

describe('429 Too Many Requests', () => {
  it('waits the Retry-After seconds, counts the wait, then succeeds', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 3, times: 1 });
    const clock = new FakeClock();
    const { client, metrics } = makeClient(simStack(s), { clock });
    await expect(client.get('license')).resolves.toBeDefined();
    expect(clock.sleeps).toEqual([3000]);
    expect(await metrics.value('cmdb_rate_limit_wait_seconds_total', { stack: 'test' })).toBe(3);
    expect(await metrics.outcomes('license')).toEqual({ '429': 1, '200': 1 });
  });

  it('pauses the whole stack: a request whose poll cannot wait that long fails, and the next request of another endpoint waits out the Retry-After', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 2, times: 1 });
    const clock = new FakeClock();
    const { client } = makeClient(simStack(s), { clock });
    // The poll has one second left: the 2 s wait does not fit, so it fails now instead of at its deadline.
    const poll = { signal: new AbortController().signal, deadline: clock.now() + 1000 };
    const err = await rejection(client.get('license', undefined, poll));
    expect(err).toBeInstanceOf(CmdbRateLimitedError);
    expect(err.message).toMatch(/the 2s wait it asks for does not fit in what is left of the poll/);
    await client.get('metrics_data');
    expect(clock.sleeps).toEqual([2000]);
  });

  it('without Retry-After holds the stack back on a pause that starts at minDelaySeconds and doubles with each refusal in a row', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, times: 6 });
    const clock = new FakeClock();
    const { client, cmdb } = makeClient(simStack(s, { retries: { max: 1, minDelaySeconds: 1, maxDelaySeconds: 8 } }), { clock, random: () => 0.5 });
    await client.get('license', undefined, pollSignal(clock, 3_600_000));
    // Six refusals with retries.max 1: a 429 is a wait, not a spent retry.
    expect(clock.sleeps).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
    expect(requestsTo(s, 'license').map((r) => r.status)).toEqual([429, 429, 429, 429, 429, 429, 200]);
    // The pause is the stack's: set while the next request of another endpoint comes.
    s.addFault({ endpoint: 'license', status: 429, times: 1 });
    const poll = { signal: new AbortController().signal, deadline: clock.now() + 100 };
    await rejection(client.get('license', undefined, poll));
    expect(cmdb.rateLimitPausedUntil()).toBe((clock.now() + 1000) / 1000);
    await client.get('metrics_data');
    expect(clock.sleeps.at(-1)).toBe(1000);
  });

  it('a 429 is a wait, not a spent retry: five refusals with retries.max 1 still end in success', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 1, times: 5 });
    const clock = new FakeClock();
    const { client, metrics } = makeClient(simStack(s, { retries: { max: 1 } }), { clock });
    await expect(client.get('license', undefined, pollSignal(clock, 3_600_000))).resolves.toBeDefined();
    expect(await metrics.outcomes('license')).toEqual({ '429': 5, '200': 1 });
    // Outside a poll (no deadline: the shared token fetch) a refusal spends a retry as before.
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 1, times: 5 });
    await expect(rejection(client.get('license'))).resolves.toBeInstanceOf(CmdbRateLimitedError);
  });

  it('reads a Retry-After HTTP-date against the Date header of the response, whatever the CMDB clock says', async () => {
    for (const skewMs of [600_000, -600_000]) {
      const clock = new FakeClock();
      // The simulator's clock, and so its Date and Retry-After headers, is 10 minutes off ours.
      const s = await sim({ now: () => clock.now() + skewMs });
      s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 30, retryAfterDate: true, times: 1 });
      const { client } = makeClient(simStack(s, { retries: { maxRetryAfterSeconds: 120 } }), { clock });
      await expect(client.get('license')).resolves.toBeDefined();
      expect(clock.sleeps).toEqual([30_000]);
    }
  });

  it('never retries sooner than retries.minDelaySeconds, even when Retry-After says 0', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 0, times: 1 });
    s.addFault({ endpoint: 'metrics_data', status: 503, retryAfterSeconds: 0, times: 1 });
    const clock = new FakeClock();
    const { client } = makeClient(simStack(s, { retries: { minDelaySeconds: 2 } }), { clock });
    await client.get('license');
    await client.get('metrics_data');
    expect(clock.sleeps).toEqual([2000, 2000]);
  });

  it('a Retry-After above maxRetryAfterSeconds fails at once, and pauses the stack for maxRetryAfterSeconds only', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 120, times: 1 });
    const clock = new FakeClock();
    const { client, metrics } = makeClient(simStack(s, { retries: { maxRetryAfterSeconds: 30 } }), { clock });
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbRateLimitedError);
    expect(err.message).toBe(
      'GET /CMDB/v2/system/metrics/license: 429 Too Many Requests: Retry-After 120s is above retries.maxRetryAfterSeconds (30s)',
    );
    expect(clock.sleeps).toEqual([]);
    expect(requestsTo(s, 'license')).toHaveLength(1);
    expect(await metrics.outcomes('license')).toEqual({ '429': 1 });
    // The stack's next request waits out the pause: maxRetryAfterSeconds (30 s), not the 120 s asked for.
    const pausedAt = clock.t;
    await expect(client.get('metrics_data')).resolves.toBeDefined();
    expect(clock.t - pausedAt).toBeGreaterThanOrEqual(30_000);
    expect(clock.t - pausedAt).toBeLessThan(31_000);
    expect(await metrics.outcomes('metrics_data')).toEqual({ '200': 1 });
  });

  it('a huge Retry-After pauses the stack for at most maxRetryAfterSeconds, and resumeAfterRateLimit (reload) ends it', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 999_999_999, times: 1 });
    const clock = new FakeClock();
    const { client, cmdb } = makeClient(simStack(s, { retries: { maxRetryAfterSeconds: 30 } }), { clock });
    await rejection(client.get('license'));
    expect(cmdb.rateLimitPausedUntil()).toBe((clock.t + 30_000) / 1000);
    const pausedAt = clock.t;
    await expect(client.get('metrics_data')).resolves.toBeDefined();
    expect(clock.t - pausedAt).toBeLessThan(31_000);

    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 999_999_999, times: 1 });
    await rejection(client.get('license'));
    expect(cmdb.rateLimitPausedUntil()).toBeGreaterThan(clock.t / 1000);
    cmdb.resumeAfterRateLimit();
    expect(cmdb.rateLimitPausedUntil()).toBeUndefined();
    const resumedAt = clock.t;
    await expect(client.get('metrics_data')).resolves.toBeDefined();
    expect(clock.t - resumedAt).toBeLessThan(2000);
  });

  it(`a 429 that never ends is CmdbRateLimitedError after ${MAX_REFUSALS} refusals in a row`, async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 1 });
    const clock = new FakeClock();
    const { client } = makeClient(simStack(s, { retries: { max: 2 } }), { clock });
    const err = await rejection(client.get('license', undefined, pollSignal(clock, 3_600_000)));
    expect(err).toBeInstanceOf(CmdbRateLimitedError);
    expect(requestsTo(s, 'license')).toHaveLength(MAX_REFUSALS);
  });

  it('a 429 to one request while the CMDB answers the others spends a retry: that endpoint fails alone, soon', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 1 });
    const clock = new FakeClock();
    const { client } = makeClient(simStack(s, { retries: { max: 2 } }), { clock });
    let settled = false;
    const license = rejection(client.get('license', undefined, pollSignal(clock, 3_600_000))).finally(() => {
      settled = true;
    });
    // The stack's other requests are answered meanwhile (bounded: the license gives up long before).
    for (let i = 0; i < 50 && !settled; i++) await client.get('metrics_data');
    const err = await license;
    expect(err).toBeInstanceOf(CmdbRateLimitedError);
    expect(err.message).toContain('while the CMDB answered other requests');
    // Before: it waited out MAX_REFUSALS refusals (its whole poll) as if the account's limit were hit.
    expect(requestsTo(s, 'license').length).toBeLessThanOrEqual(2 + 2);
  });

  it("honours the simulator's own per-minute limit by waiting its Retry-After", async () => {
    const clock = new FakeClock();
    // The simulator runs on the same fake time, so the wait really opens its window again.
    const s = await sim({ now: () => clock.now() });
    const { client, metrics } = makeClient(simStack(s, { retries: { maxRetryAfterSeconds: 90 } }), { clock });
    await client.get('license');
    s.setRateLimit({ perMinute: 2, retryAfter: true });
    await client.get('license');
    await client.get('license');
    await expect(client.get('license')).resolves.toBeDefined();
    expect(clock.sleeps).toEqual([60_000]);
    expect(await metrics.outcomes('license')).toEqual({ '200': 4, '429': 1 });
  });
});

describe('client-side rate budget', () => {
  it('sets cmdb_rate_limit_requests_per_minute at construction', async () => {
    const s = await sim();
    const { metrics } = makeClient(simStack(s, { rateLimitPerMinute: 42 }));
    expect(await metrics.value('cmdb_rate_limit_requests_per_minute', { stack: 'test' })).toBe(42);
  });

  it('spends the budget on token requests and data requests alike, and waits once it is used up', async () => {
    const s = await sim();
    const clock = new FakeClock();
    // 12 a minute: burst 2, then one every 5 s.
    const { client, metrics } = makeClient(simStack(s, { rateLimitPerMinute: 12 }), { clock });
    await client.get('license'); // token + license = the burst
    await client.get('license');
    await client.get('license');
    expect(clock.sleeps).toEqual([5000, 5000]);
    expect(await metrics.value('cmdb_rate_limit_wait_seconds_total', { stack: 'test' })).toBe(10);
  });

  it("spends a pace given as an option (a backfill's share), leaves the stack's rateLimitPerMinute as configured, and keeps the pace on a reload", async () => {
    const s = await sim();
    const clock = new FakeClock();
    const stack = simStack(s, { rateLimitPerMinute: 6000 });
    const { client, cmdb, metrics } = makeClient(stack, { clock, requestsPerMinute: 12 });
    expect(cmdb.settings.rateLimitPerMinute, "the daemon's budget keeps its one meaning").toBe(6000);
    expect(await metrics.value('cmdb_rate_limit_requests_per_minute', { stack: 'test' })).toBe(12);
    cmdb.reconfigure({ ...stack, rateLimitPerMinute: 3000 }, metrics.instruments);
    expect(await metrics.value('cmdb_rate_limit_requests_per_minute', { stack: 'test' })).toBe(12);
    await client.get('license'); // token + license = the burst of 12 a minute
    await client.get('license');
    await client.get('license');
    expect(clock.sleeps).toEqual([5000, 5000]);
  });
});

describe('retries', () => {
  it.each([502, 503, 504])('honours Retry-After on a %i: every retry waits what the server asked', async (status) => {
    const clock = new FakeClock();
    const s = await sim({ now: () => clock.now() });
    s.addFault({ endpoint: 'license', status, retryAfterSeconds: 20 });
    const { client } = makeClient(simStack(s, { retries: { max: 3, maxRetryAfterSeconds: 120 } }), { clock });
    const err = await rejection(client.get('license'));
    expect((err as CmdbHttpError).status).toBe(status);
    const at = requestsTo(s, 'license').map((r) => r.at);
    expect(at).toHaveLength(4);
    for (let i = 1; i < at.length; i++) expect((at[i] as number) - (at[i - 1] as number)).toBeGreaterThanOrEqual(20_000);
  });

  it('a 503 Retry-After above maxRetryAfterSeconds ends the retries at once and pauses its group (not the stack) for maxRetryAfterSeconds', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 503, retryAfterSeconds: 3600 });
    const clock = new FakeClock();
    const { client, cmdb } = makeClient(simStack(s, { retries: { max: 3, maxRetryAfterSeconds: 30 } }), { clock });
    await rejection(client.get('license'));
    expect(requestsTo(s, 'license')).toHaveLength(1);
    expect(cmdb.pauses()).toEqual([expect.objectContaining({ scope: 'group', group: 'license', status: 503, until: clock.now() + 30_000 })]);
    expect(cmdb.rateLimitPausedUntil()).toBeUndefined();
  });

  it.each([
    ['a 500', { status: 500 }, { '500': 1, '200': 1 }],
    ['a 503', { status: 503 }, { '503': 1, '200': 1 }],
    ['a connection reset', { reset: true }, { network: 1, '200': 1 }],
  ])('retries after %s and then succeeds', async (_n, fault, outcomes) => {
    const s = await sim();
    s.addFault({ endpoint: 'license', times: 1, ...fault });
    const clock = new FakeClock();
    const { client, metrics } = makeClient(simStack(s), { clock });
    await expect(client.get('license')).resolves.toMatchObject({ licenseType: expect.any(String) });
    expect(requestsTo(s, 'license')).toHaveLength(2);
    expect(clock.sleeps).toHaveLength(1);
    expect(await metrics.outcomes('license')).toEqual(outcomes);
  });

  it('gives up after retries.max retries with the last status', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 503 });
    const { client } = makeClient(simStack(s, { retries: { max: 3 } }), { clock: new FakeClock() });
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbHttpError);
    expect(err.message).toBe('GET /CMDB/v2/system/metrics/license: 503 Service Unavailable');
    expect(requestsTo(s, 'license')).toHaveLength(4);
  });

  it.each([
    ['403 (forbidden)', (s: Awaited<ReturnType<typeof sim>>) => s.forbid(['license']), 403],
    ['404', (s: Awaited<ReturnType<typeof sim>>) => s.addFault({ endpoint: 'license', status: 404 }), 404],
    ['400', (s: Awaited<ReturnType<typeof sim>>) => s.addFault({ endpoint: 'license', status: 400 }), 400],
    ['409', (s: Awaited<ReturnType<typeof sim>>) => s.addFault({ endpoint: 'license', status: 409 }), 409],
  ])('never retries a %s', async (_n, setup, status) => {
    const s = await sim();
    setup(s);
    const clock = new FakeClock();
    const { client, metrics } = makeClient(simStack(s), { clock });
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbHttpError);
    expect((err as CmdbHttpError).status).toBe(status);
    expect(requestsTo(s, 'license')).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
    expect(await metrics.outcomes('license')).toEqual({ [String(status)]: 1 });
  });
});

describe('timeouts', () => {
  it('a response slower than timeoutSeconds is CmdbTimeoutError, retried like a network error', async () => {
    const s = await sim();
    // Held: slower than any timeout, whatever the machine's speed.
    s.addFault({ endpoint: 'license', hold: true });
    const { client, metrics } = makeClient(simStack(s, { timeoutSeconds: 0.2, retries: { max: 1 } }));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTimeoutError);
    expect(err.message).toBe('GET /CMDB/v2/system/metrics/license: no complete response within 0.2s');
    expect(await metrics.outcomes('license')).toEqual({ timeout: 2 });
    expect(await metrics.value('cmdb_endpoint_request_duration_seconds_count', { stack: 'test', endpoint: 'license' })).toBe(2);
  });

  it("a backfill's token request: no answer begun within its first-byte deadline is a timeout at once, not asked again within the request", async () => {
    const s = await sim();
    // A CMDB that takes the connection and never answers the token request.
    s.addFault({ endpoint: 'access_token', hold: true });
    const { client, metrics } = makeClient(simStack(s, { timeoutSeconds: 30, retries: { max: 3 } }), { tokenFirstByteSeconds: 0.2 });
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTimeoutError);
    expect(err.message).toBe('POST /CMDB/v1/access_token: no answer within 0.2s');
    // One attempt: the unit that needed the token fails, and the backfill's rule counts it.
    expect(await metrics.outcomes('access_token')).toEqual({ timeout: 1 });
    expect(requestsTo(s, 'license')).toHaveLength(0);
  });

  it('each token granted is told to whoever keeps it (the daemon, for a backfill given its --storage.path)', async () => {
    const s = await sim();
    const granted: string[] = [];
    const { client } = makeClient(simStack(s), { onToken: (t) => granted.push(t) });
    await client.get('license');
    expect(granted).toEqual(s.issuedTokens());
    expect(granted).toHaveLength(1);
  });

  it('a slow answer followed by a fast one succeeds on the retry', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', hold: true, times: 1 });
    // Long enough for the fast answer on a loaded machine (the held one never comes).
    const { client, metrics } = makeClient(simStack(s, { timeoutSeconds: 2 }));
    await expect(client.get('license')).resolves.toBeDefined();
    expect(await metrics.outcomes('license')).toEqual({ timeout: 1, '200': 1 });
  });
});

describe('abort', () => {
  it('an aborted signal ends an in-flight request at once with CmdbAbortedError', async () => {
    const s = await sim();
    const { client, metrics } = makeClient(simStack(s, { timeoutSeconds: 30 }));
    await client.get('metrics_data'); // token in hand
    s.addFault({ endpoint: 'license', latencyMs: 60_000 });
    const ctl = new AbortController();
    const pending = rejection(client.get('license', undefined, { signal: ctl.signal }));
    setTimeout(() => ctl.abort(), 50);
    const err = await pending;
    expect(err).toBeInstanceOf(CmdbAbortedError);
    expect(err.message).toBe('GET /CMDB/v2/system/metrics/license: aborted (exporter shutting down)');
    // A shutdown is not a CMDB outcome.
    expect(await metrics.outcomes('license')).toEqual({});
  });

  it('ends a back-off wait at once', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 500 });
    const { client } = makeClient(simStack(s, { retries: { minDelaySeconds: 600, maxDelaySeconds: 600 } }), { clock: realClock });
    const ctl = new AbortController();
    const pending = rejection(client.get('license', undefined, { signal: ctl.signal }));
    await waitFor(() => requestsTo(s, 'license').length === 1);
    ctl.abort();
    expect(await pending).toBeInstanceOf(CmdbAbortedError);
  });

  it('ends a wait for the rate budget at once', async () => {
    const s = await sim();
    // 1 a minute: the token fetch takes the only request of the burst.
    const { client } = makeClient(simStack(s, { rateLimitPerMinute: 1 }));
    const ctl = new AbortController();
    const pending = rejection(client.get('license', undefined, { signal: ctl.signal }));
    await waitFor(() => requestsTo(s, 'access_token').length === 1);
    ctl.abort();
    expect(await pending).toBeInstanceOf(CmdbAbortedError);
    expect(requestsTo(s, 'license')).toHaveLength(0);
  });

  it('ends a wait for the shared token fetch at once; close() then ends the fetch itself', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'access_token', latencyMs: 60_000 });
    const { client, metrics } = makeClient(simStack(s, { timeoutSeconds: 30 }));
    const ctl = new AbortController();
    const pending = rejection(client.get('license', undefined, { signal: ctl.signal }));
    await waitFor(() => requestsTo(s, 'access_token').length === 1);
    ctl.abort();
    expect(await pending).toBeInstanceOf(CmdbAbortedError);
    await client.close();
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'error' })).toBe(0);
    expect(requestsTo(s, 'license')).toHaveLength(0);
  });

  it('an already aborted signal sends nothing', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    const ctl = new AbortController();
    ctl.abort();
    await expect(client.get('license', undefined, { signal: ctl.signal })).rejects.toBeInstanceOf(CmdbAbortedError);
    expect(s.requests()).toHaveLength(0);
  });
});

/** Until `cond` holds (an event of the simulator's request log), bounded against a hang. */
async function waitFor(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  if (!cond()) throw new Error('condition not reached within 60 s');
}
