/**
 * Issue 11 #1: a stack paused by a server Retry-After is visible (metric, client, status page) and
 * its endpoints do not go on reporting up while their polls cannot run. Real client, real simulator.
 */
import { describe, expect, it } from 'vitest';
import { pollSettings } from '../../src/config/endpoints.js';
import { BUILTIN_SETTINGS } from '../../src/config/rules.js';
import { renderLanding } from '../../src/server/landing.js';
import { requestsTo, sim, simStack } from '../cmdb/helpers/sim.js';
import { simPoller } from './sim-poller.js';

const PAUSED = 'cmdb_rate_limit_paused_until_timestamp_seconds';
/** retries.maxRetryAfterSeconds of the stack under test: the longest a Retry-After may pause it. */
const CAP_SECONDS = 900;

describe('a stack paused by Retry-After', () => {
  it('shows when the pause ends (metric and status page) and a reload clears it', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 999_999_999, times: 1 });
    const p = simPoller(simStack(s, { retries: { maxRetryAfterSeconds: CAP_SECONDS } }));
    expect(await p.metrics.value(PAUSED, { stack: 'test' })).toBe(0);
    const before = Date.now() / 1000;
    await p.poller.poll('license');
    const until = await p.metrics.value(PAUSED, { stack: 'test' });
    // Capped: a Retry-After of years pauses the stack for maxRetryAfterSeconds at most.
    expect(until).toBeGreaterThanOrEqual(before + CAP_SECONDS - 1);
    expect(until).toBeLessThanOrEqual(Date.now() / 1000 + CAP_SECONDS);
    expect(p.cmdb.rateLimitPausedUntil()).toBeCloseTo(until, 0);
    expect(p.status('license')).toMatchObject({ state: 'failing', outcome: 'rate_limited' });

    // Rendered at the moment the pause began (its end less the cap), however long the poll took.
    const html = renderLanding({
      version: 't',
      ready: true,
      now: until - CAP_SECONDS,
      stacks: [{ name: 'test', baseUrl: s.url, unauthorized: false, pauses: p.cmdb.pauses().map((x) => ({ ...x, until: x.until / 1000 })), endpoints: p.poller.runner.status() }],
    });
    // The status that set the pause, and the request that got it.
    expect(html).toMatch(/Paused by a 429 to GET \/CMDB\/v2\/system\/metrics\/license: no request of this stack leaves until <time datetime="[^"]+">/);
    expect(html).toContain('(in 15m)');
    // First in "What needs attention", as the cause of the endpoints going down: critical, until when.
    expect(html).toMatch(/<section id="attention">.*?<li class="critical cause"><span class="sev">critical<\/span>( <span class="new"[^>]*>new<\/span>)? <b class="cause-title">paused by the CMDB<\/b>: .*a reload ends it\..* It ends at <time[^>]*>\d\d:\d\d UTC<\/time> \(in 15m\)\./s);
    // The cause names the status that set the pause and the request that got it.
    expect(html).toMatch(/paused by the CMDB<\/b>: the CMDB asked the exporter to wait \(a 429 to GET \/CMDB\/v2\/system\/metrics\/license\)/);

    p.cmdb.resumeAfterRateLimit();
    expect(await p.metrics.value(PAUSED, { stack: 'test' })).toBe(0);
    expect(p.cmdb.rateLimitPausedUntil()).toBeUndefined();
    await p.poller.poll('license');
    expect(p.status('license')).toMatchObject({ state: 'ok' });
  });

  it('endpoints whose polls wait on the pause go down when their interval runs out, without a request', async () => {
    const s = await sim();
    // A pause of 5 minutes (below maxRetryAfterSeconds: the client would wait it out)...
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 300, times: 1 });
    // The license polled every minute: the 5-minute wait does not fit in its poll, which ends at once.
    const stack = simStack(s, { retries: { maxRetryAfterSeconds: CAP_SECONDS }, intervals: { ...BUILTIN_SETTINGS.intervals, license: 60 } });
    const p = simPoller(stack);
    await p.poller.poll('ingestion');
    expect(p.status('data_ingestion')).toMatchObject({ state: 'ok' });
    await p.poller.poll('license');
    const pausedUntil = p.cmdb.rateLimitPausedUntil() as number;
    expect(pausedUntil).toBeGreaterThan(Date.now() / 1000 + 60);
    // ...longer than the ingestion interval (1 s from now on, as a reload would set it): its poll
    // cannot run and must not leave it up. The first poll ran on the default interval, so that it
    // was up before whatever the machine's speed.
    const faster = { ...stack, intervals: { ...stack.intervals, ingestion: 1 } };
    p.poller.reconfigure(faster, pollSettings(faster));
    const asked = requestsTo(s, 'data_ingestion').length;
    await p.poller.poll('ingestion');
    expect(p.status('data_ingestion')).toMatchObject({ state: 'failing', outcome: 'timeout' });
    expect(p.store.snapshot('test', 'data_ingestion')).toMatchObject({ up: 0 });
    expect(requestsTo(s, 'data_ingestion')).toHaveLength(asked);
    // Cut off by its interval, not by the pause ending: the pause still holds, unchanged.
    expect(p.cmdb.rateLimitPausedUntil()).toBe(pausedUntil);
  });
});
