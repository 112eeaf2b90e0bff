/**
 * Waits that follow a long-lived abort signal (a stack's stop, a poll's deadline) share one listener
 * on it: with one listener per wait, the eleventh waiting request made Node warn of a leak
 * (MaxListenersExceededWarning), ~200 lines a run of the budget property test.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { eitherSignal, followAbort } from '../src/signals.js';
import { makeClient } from './cmdb/helpers/client.js';
import { sim, simStack } from './cmdb/helpers/sim.js';

const listeners = (s: AbortSignal) => getEventListeners(s, 'abort').length;

/** Node's warnings while `run` runs (they are emitted on the next tick). */
async function warningsDuring(run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const onWarning = (w: Error) => seen.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  try {
    await run();
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('warning', onWarning);
  }
  return seen;
}

describe('followAbort', () => {
  it('many waits on one signal: one listener, each wait told the reason once, gone when all let go', async () => {
    const ctl = new AbortController();
    const told: unknown[] = [];
    const leaves = Array.from({ length: 50 }, () => followAbort(ctl.signal, (r) => told.push(r)));
    expect(listeners(ctl.signal)).toBe(1);
    leaves.slice(0, 49).forEach((leave) => leave());
    expect(listeners(ctl.signal)).toBe(1);
    leaves[49]?.();
    expect(listeners(ctl.signal)).toBe(0);
    ctl.abort(new Error('late'));
    expect(told).toEqual([]);
  });

  it("tells every wait still following, with the signal's reason, and only those", () => {
    const ctl = new AbortController();
    const told: string[] = [];
    const a = followAbort(ctl.signal, (r) => told.push(`a:${(r as Error).message}`));
    const b = followAbort(ctl.signal, (r) => told.push(`b:${(r as Error).message}`));
    b();
    ctl.abort(new Error('stop'));
    expect(told).toEqual(['a:stop']);
    a();
    // An already aborted signal tells at once.
    followAbort(ctl.signal, (r) => told.push(`c:${(r as Error).message}`));
    expect(told).toEqual(['a:stop', 'c:stop']);
  });
});

describe('eitherSignal', () => {
  it('aborts with the first reason; 100 combinations with one long-lived signal leave one listener on it and no warning', async () => {
    const stop = new AbortController();
    const warnings = await warningsDuring(async () => {
      const waits = Array.from({ length: 100 }, () => eitherSignal(stop.signal, new AbortController().signal));
      expect(listeners(stop.signal)).toBe(1);
      stop.abort(new Error('the stack is stopping'));
      for (const w of waits) expect((w.signal.reason as Error).message).toBe('the stack is stopping');
      waits.forEach((w) => w.dispose());
    });
    expect(warnings).toEqual([]);
    const own = new AbortController();
    const either = eitherSignal(new AbortController().signal, own.signal);
    own.abort(new Error('deadline'));
    expect((either.signal.reason as Error).message).toBe('deadline');
  });
});

describe('the client with many requests on one poll signal', () => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  it('maxConcurrency 30: 30 requests waiting for one token and in flight at once warn of no leak', async () => {
    const s = await sim();
    open.push(s);
    // Slow answers keep all 30 in flight (and waiting for the one token request) together.
    s.addFault({ endpoint: 'access_token', latencyMs: 200 });
    s.addFault({ endpoint: 'license', latencyMs: 200 });
    const { client } = makeClient(simStack(s, { maxConcurrency: 30, rateLimitPerMinute: 6000 }));
    const poll = new AbortController();
    const warnings = await warningsDuring(async () => {
      const results = await Promise.all(Array.from({ length: 30 }, () => client.get('license', undefined, { signal: poll.signal })));
      expect(results).toHaveLength(30);
    });
    expect(warnings).toEqual([]);
    expect(listeners(poll.signal)).toBe(0);
  });
});
