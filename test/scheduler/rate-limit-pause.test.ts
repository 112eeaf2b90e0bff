/**
 * Issue 11 #1: a stack paused by a server Retry-After is visible (metric, client, status page) and
 * its endpoints do not go on reporting up while their polls cannot run. Real client, real simulator.
 */
import { describe, expect, it } from 'vitest';
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

    const html = renderLanding({
      version: 't',
      ready: true,
      now: before,
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
    // A pause the client is willing to wait out (Retry-After below maxRetryAfterSeconds: 5 s)...
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 4, times: 1 });
    // ...but longer than the ingestion interval: its poll cannot run and must not leave it up.
    const p = simPoller(simStack(s, { intervals: { ...BUILTIN_SETTINGS.intervals, ingestion: 1, license: 1 } }));
    await p.poller.poll('ingestion');
    expect(p.status('data_ingestion')).toMatchObject({ state: 'ok' });
    await p.poller.poll('license');
    const asked = requestsTo(s, 'data_ingestion').length;
    await p.poller.poll('ingestion');
    expect(p.status('data_ingestion')).toMatchObject({ state: 'failing', outcome: 'timeout' });
    expect(p.store.snapshot('test', 'data_ingestion')).toMatchObject({ up: 0 });
    expect(requestsTo(s, 'data_ingestion')).toHaveLength(asked);
    expect(p.cmdb.rateLimitPausedUntil()).toBeGreaterThan(Date.now() / 1000);
  });
});
