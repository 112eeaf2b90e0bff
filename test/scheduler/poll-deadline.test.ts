/**
 * Issue 11 #11: one poll takes at most its group's interval, against the real simulator and the
 * real client. Before the bound, a hanging endpoint was tried timeout × (retries + 1) plus back-off
 * and kept reporting up the whole time.
 */
import { describe, expect, it } from 'vitest';
import { BUILTIN_SETTINGS } from '../../src/config/rules.js';
import { deadlineReached, pollDeadline, PollDeadlineReached, progressDeadline } from '../../src/scheduler/deadline.js';
import type { StackConfig } from '../../src/config/types.js';
import { waitFor } from '../helpers/wait.js';
import { requestsTo, sim, simStack, trackedAsset, trackedUser } from '../cmdb/helpers/sim.js';
import { simPoller as poller } from './sim-poller.js';

/** Attempts of 2 s, 3 retries: unbounded, a hanging endpoint holds one poll for 8 s and more. */
function hangingStack(url: Parameters<typeof simStack>[0], intervalSeconds = 1): StackConfig {
  return simStack(url, {
    timeoutSeconds: 2,
    retries: { max: 3 },
    // Below the configurable minimum (10 s) to keep the test short; the poller does not check it.
    intervals: { ...BUILTIN_SETTINGS.intervals, ingestion: intervalSeconds },
  });
}

/**
 * The poller with its token already fetched: the poll's first step is then the hanging request
 * itself, sent as the poll starts, so the 1 s interval bounds the hang alone and not also a token
 * request and a poll of a loaded machine (which once left no time for the request to leave).
 */
async function warmPoller(stack: StackConfig) {
  const p = poller(stack);
  await p.client.get('license');
  return p;
}

describe('the time bound of one poll (the group interval)', () => {
  it('cuts off a hanging endpoint at the interval: one attempt, outcome timeout, reported down', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'data_ingestion', latencyMs: 60_000 });
    const { poller: p, store, status, log } = await warmPoller(hangingStack(s));
    await p.poll('ingestion');
    // The retry loop did not go on past the bound: the first 2 s attempt was cut at 1 s.
    expect(requestsTo(s, 'data_ingestion')).toHaveLength(1);
    expect(status('data_ingestion')).toMatchObject({ state: 'failing', outcome: 'timeout', consecutiveFailures: 1 });
    expect(status('data_ingestion')?.error).toMatch(/^poll of data_ingestion: not finished within its 1s interval/);
    expect(status('data_ingestion')?.hint).toMatch(/did not finish within its interval.*raise timeoutSeconds or the interval/);
    expect(store.snapshot('test', 'data_ingestion')).toMatchObject({ up: 0 });
    // The next run is asked alongside, not after: the hang does not take it down. The detail needs the run list.
    expect(status('data_ingestion_next')).toMatchObject({ state: 'ok', outcome: 'success' });
    expect(requestsTo(s, 'data_ingestion_next')).toHaveLength(1);
    expect(status('data_ingestion_detail')).toMatchObject({ state: 'blocked' });
    // The runner logs the cut-off like any other failure, with the timeout hint.
    expect(log.lines().filter((l) => l.level === 'warn' && l.outcome === 'timeout').map((l) => l.endpoint)).toEqual(['data_ingestion']);
  });

  it("cuts off a hanging asset_change without taking user_change down: the group's endpoints are asked at once", async () => {
    const s = await sim();
    s.addFault({ endpoint: 'asset_change', latencyMs: 60_000 });
    const stack = simStack(s, {
      timeoutSeconds: 2,
      track: { assets: [trackedAsset()], users: [trackedUser()] },
      intervals: { ...BUILTIN_SETTINGS.intervals, changes: 1 },
    });
    const { poller: p, status } = await warmPoller(stack);
    await p.poll('changes');
    expect(status('asset_change')).toMatchObject({ state: 'failing', outcome: 'timeout' });
    expect(status('user_change')).toMatchObject({ state: 'ok', outcome: 'success' });
    expect(requestsTo(s, 'user_change')).toHaveLength(1);
  });

  it('is not a failure when the exporter shuts down during the poll', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'data_ingestion', latencyMs: 60_000 });
    // An interval the hang outlasts by far: the shutdown, not the deadline, ends this poll.
    const { poller: p, status } = poller(hangingStack(s, 50));
    const shutdown = new AbortController();
    const polling = p.poll('ingestion', shutdown.signal);
    await waitFor('the ingestion request at the CMDB', () => requestsTo(s, 'data_ingestion').length > 0);
    shutdown.abort();
    await polling;
    expect(status('data_ingestion')).toMatchObject({ state: 'pending', consecutiveFailures: 0 });
  });

  it('leaves a poll that finishes in time alone', async () => {
    const s = await sim();
    // In time by far (the bound is what is tested above): nothing of the deadline shows.
    const { poller: p, status } = poller(hangingStack(s, 50));
    await p.poll('ingestion');
    expect(status('data_ingestion')).toMatchObject({ state: 'ok', outcome: 'success' });
    expect(status('data_ingestion_next')).toMatchObject({ state: 'ok', outcome: 'success' });
  });
});

describe('pollDeadline', () => {
  it('aborts with PollDeadlineReached at the deadline, with the outer reason on shutdown', async () => {
    const timed = pollDeadline(undefined, 0.01);
    await new Promise((r) => timed.signal.addEventListener('abort', r, { once: true }));
    expect(deadlineReached(timed.signal)).toBeInstanceOf(PollDeadlineReached);
    expect(deadlineReached(timed.signal)?.seconds).toBe(0.01);

    const outer = new AbortController();
    const bounded = pollDeadline(outer.signal, 60);
    outer.abort(new Error('shutting down'));
    expect(bounded.signal.aborted).toBe(true);
    expect(deadlineReached(bounded.signal)).toBeUndefined();
    bounded.dispose();
  });
});

describe('progressDeadline (issue 21: a connector scan may outlast its interval while it moves)', () => {
  it('does not abort at the interval while the read moves, and aborts as stalled once it stops', async () => {
    let idle: number | undefined = 0;
    let checks = 0;
    const d = progressDeadline(undefined, 0.05, 1.5, () => (checks++, idle));
    try {
      // Its check at the interval has run (it asks how long the read stood still): the read moves, no abort.
      await waitFor('the check at the interval', () => checks >= 1);
      expect(d.signal.aborted).toBe(false);
      idle = 2;
      await new Promise<void>((resolve) => d.signal.addEventListener('abort', () => resolve(), { once: true }));
      const reason = deadlineReached(d.signal);
      expect(reason?.stalled).toBe(true);
      expect(reason?.seconds).toBe(1.5);
    } finally {
      d.dispose();
    }
  });

  it('aborts at the interval, as pollDeadline, when no read is under way', async () => {
    const d = progressDeadline(undefined, 0.05, 100, () => undefined);
    try {
      await new Promise<void>((resolve) => d.signal.addEventListener('abort', () => resolve(), { once: true }));
      expect(deadlineReached(d.signal)).toMatchObject({ seconds: 0.05, stalled: false });
    } finally {
      d.dispose();
    }
  });
});
