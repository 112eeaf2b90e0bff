import { describe, expect, it } from 'vitest';
import { RequestBudget, WINDOW_MARGIN_MS, WINDOW_MS, burstFor } from '../../src/cmdb/budget.js';
import { Semaphore, StackLimiter } from '../../src/cmdb/limiter.js';
import { realClock, type Clock } from '../../src/cmdb/clock.js';
import { Pauses, type Pause } from '../../src/cmdb/pauses.js';
import { FakeClock } from './helpers/clock.js';

describe('burstFor', () => {
  it.each([
    [1, 1],
    [6, 1],
    [7, 2],
    [30, 5],
    [50, 9],
    [60, 10],
    [600, 10],
  ])('a budget of %i a minute bursts %i', (rate, burst) => {
    expect(burstFor(rate)).toBe(burst);
  });
});

/** Takes a place and lets it leave when it may now (as the limiter does): the ms to wait, 0 when it left. */
function reserve(b: RequestBudget, now: number): number {
  const place = b.take(now);
  const wait = place.at - now;
  if (wait <= 0) b.leave(place, now);
  return wait;
}

/** Whole tokens in the bucket at `now`: requests that could leave without waiting. */
const available = (b: RequestBudget, now: number) => Math.max(0, Math.floor(b.state(now).tokens));

describe('RequestBudget', () => {
  it('lets the burst through at once, then spaces requests by 60/rate seconds', () => {
    const b = new RequestBudget(60, 0); // burst 10, one a second
    const waits = Array.from({ length: 13 }, () => reserve(b, 0));
    expect(waits).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1000, 2000, 3000]);
  });

  it('refills with time up to the burst size only', () => {
    const b = new RequestBudget(60, 0);
    for (let i = 0; i < 10; i++) reserve(b, 0);
    expect(available(b, 5000)).toBe(5);
    expect(available(b, 1_000_000)).toBe(10);
  });

  it('gives back a cancelled place', () => {
    const b = new RequestBudget(6, 0); // burst 1, one per 10 s
    expect(reserve(b, 0)).toBe(0);
    const waiting = b.take(0);
    expect(waiting.at).toBe(10_000);
    b.cancel(waiting, 0);
    expect(reserve(b, 0)).toBe(10_000);
  });

  it('plans no request after a place that was given back: with a token in the bucket it leaves at once (issue 37)', () => {
    const b = new RequestBudget(60, 0); // burst 10, one a second
    for (let i = 0; i < 10; i++) expect(reserve(b, 0)).toBe(0);
    const waiting = [b.take(0), b.take(0), b.take(0)];
    expect(waiting.map((p) => p.at)).toEqual([1000, 2000, 3000]);
    // Their poll was aborted: every place given back.
    for (const p of waiting) b.cancel(p, 0);
    // 1.5 s later a token is back: the next request leaves now (before: at 3 s, behind the places given back).
    expect(available(b, 1500)).toBe(1);
    expect(reserve(b, 1500)).toBe(0);
  });

  it('a place given back from the middle of the line: the places behind it keep their time, the next new one does not wait for the one given back', () => {
    const b = new RequestBudget(6, 0); // burst 1, one per 10 s
    reserve(b, 0);
    const [second, third, fourth] = [b.take(0), b.take(0), b.take(0)];
    expect([second.at, third.at, fourth.at]).toEqual([10_000, 20_000, 30_000]);
    b.cancel(fourth, 0);
    // The token comes back: the next place takes the given-back time, no later.
    expect(b.take(0).at).toBe(30_000);
  });
});

describe('RequestBudget rolling window', () => {
  /** The most send times in any 60 s window. */
  const busiestMinute = (times: number[]) => Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 60_000).length));

  /** Takes places and lets each leave at its time (as the limiter does), returning when they left. */
  function sendAll(b: RequestBudget, n: number, now = 0): number[] {
    return Array.from({ length: n }, () => {
      const place = b.take(now);
      let at = place.at;
      for (let wait = b.leave(place, at); wait > 0; wait = b.leave(place, at)) at += wait;
      return at;
    });
  }

  it(`keeps any ${WINDOW_MS / 1000} s at or below the rate, burst included: never ${'rate + 1'} in a minute`, () => {
    const b = new RequestBudget(50, 0); // burst 9
    const sendTimes = sendAll(b, 200);
    expect(busiestMinute(sendTimes)).toBe(50);
    // The margin: the 51st request leaves a whole window (60 s + WINDOW_MARGIN_MS) after the first.
    expect(sendTimes[50]).toBeGreaterThanOrEqual((sendTimes[0] as number) + WINDOW_MS);
    expect(WINDOW_MS).toBe(60_000 + WINDOW_MARGIN_MS);
  });

  it('counts the window from when a request really left, not from its planned time', () => {
    const b = new RequestBudget(6, 0); // burst 1, one per 10 s, 6 a window
    const first = b.take(0);
    expect(b.leave(first, 0)).toBe(0);
    // It really left 5 s late (a busy event loop, a slow connect): the window counts it from then.
    b.sentAt(first, 5000);
    const times = sendAll(b, 6);
    expect(times.slice(0, 5)).toEqual([10_000, 20_000, 30_000, 40_000, 50_000]);
    // Planned from the reservation it would have left at 62 s: 57 s after the first arrived.
    expect(times[5]).toBe(5000 + WINDOW_MS);
  });

  it('a place planned before the request ahead of it really left is checked again against what left', () => {
    const b = new RequestBudget(2, 0); // burst 1, one per 30 s, 2 a window
    b.leave(b.take(0), 0);
    const second = b.take(0);
    const third = b.take(0);
    const fourth = b.take(0);
    // Planned from the second's planned time (30 s): a window after it.
    expect(fourth.at).toBe(30_000 + WINDOW_MS);
    // The second really left 20 s late (it waited for a pause, a busy event loop).
    expect(b.leave(second, 50_000)).toBe(0);
    b.sentAt(second, 50_000);
    expect(b.leave(third, third.at)).toBe(0);
    // At its planned time the fourth finds that: it waits until a whole window after the second left.
    const planned = fourth.at;
    expect(b.leave(fourth, planned)).toBe(50_000 + WINDOW_MS - planned);
  });

  it('hands what was spent to a new budget instead of starting full', () => {
    const old = new RequestBudget(50, 0);
    const spent = sendAll(old, 50);
    const next = new RequestBudget(50, 1000, old.state(1000));
    expect(available(next, 1000)).toBe(0);
    const sendTimes = [...spent, ...sendAll(next, 20, 1000)];
    expect(busiestMinute(sendTimes)).toBe(50);
  });

  it('keeps at most the new burst when the rate shrinks on reload', () => {
    const old = new RequestBudget(60, 0);
    const next = new RequestBudget(6, 0, old.state(0));
    expect(available(next, 0)).toBe(1);
  });

  it('a new rate in place keeps what was spent', () => {
    const b = new RequestBudget(60, 0);
    sendAll(b, 10);
    b.setRate(6, 0);
    expect(available(b, 0)).toBe(0);
    // The new burst: one token at the most, however long it refills.
    expect(available(b, 1_000_000)).toBe(1);
  });
});

describe('Semaphore', () => {
  /** Whether a slot is free now: acquire() resolves at once only then (the probe's slot goes back, its wait is dropped). */
  async function slotFree(s: Semaphore): Promise<boolean> {
    const ctl = new AbortController();
    const probe = s.acquire(ctl.signal).then(
      () => true,
      () => false,
    );
    await Promise.resolve();
    ctl.abort();
    const free = await probe;
    if (free) s.release();
    return free;
  }

  it('admits at most max holders and hands slots over in FIFO order', async () => {
    const s = new Semaphore(2);
    await s.acquire();
    await s.acquire();
    const order: number[] = [];
    const third = s.acquire().then(() => order.push(3));
    const fourth = s.acquire().then(() => order.push(4));
    await Promise.resolve();
    expect(order).toEqual([]);
    s.release();
    await third;
    s.release();
    await fourth;
    expect(order).toEqual([3, 4]);
    expect(await slotFree(s)).toBe(false);
  });

  it('drops a waiter whose signal aborts, without leaking its slot', async () => {
    const s = new Semaphore(1);
    await s.acquire();
    const ctl = new AbortController();
    const waiting = s.acquire(ctl.signal);
    ctl.abort();
    await expect(waiting).rejects.toThrow();
    s.release();
    expect(await slotFree(s)).toBe(true);
    await s.acquire();
    expect(await slotFree(s)).toBe(false);
  });

  it('a larger cap on reload lets waiters in at once; a smaller one lets the ones in flight finish', async () => {
    const s = new Semaphore(1);
    await s.acquire();
    let second = false;
    const waiting = s.acquire().then(() => (second = true));
    s.resize(2);
    await waiting;
    expect(second).toBe(true);
    s.resize(1);
    s.release();
    // The second still holds the only slot.
    expect(await slotFree(s)).toBe(false);
  });
});

describe('StackLimiter', () => {
  const limiterOf = (clock: Clock, ratePerMinute: number, maxConcurrency: number, onWait: (s: number) => void = () => {}) => {
    const pauses = new Pauses(clock);
    return { pauses, limiter: new StackLimiter({ ratePerMinute, maxConcurrency, clock, pauses, onWait }) };
  };
  const pause = (scope: 'stack' | 'group', until: number): Pause => ({ scope, until, status: 429, endpoint: 'license', request: 'GET /x', ...(scope === 'group' ? { group: 'license' } : {}) });

  it('waits on the injected clock once the burst is used and reports the wait time', async () => {
    const clock = new FakeClock(0);
    const waited: number[] = [];
    const { limiter } = limiterOf(clock, 6, 5, (s) => waited.push(s));
    (await limiter.acquire('license')).release(true);
    (await limiter.acquire('license')).release(true);
    (await limiter.acquire('license')).release(true);
    expect(clock.sleeps).toEqual([10_000, 10_000]);
    expect(waited).toEqual([10, 10]);
  });

  it('waits out a pause of the stack, and of the request\'s own group only', async () => {
    const clock = new FakeClock(0);
    const { limiter, pauses } = limiterOf(clock, 6000, 5);
    pauses.set(pause('group', 3000));
    (await limiter.acquire('inventory')).release(true);
    expect(clock.now()).toBe(0);
    (await limiter.acquire('license')).release(true);
    expect(clock.now()).toBe(3000);
    pauses.set(pause('stack', 5000));
    (await limiter.acquire('inventory')).release(true);
    expect(clock.now()).toBe(5000);
  });

  it('after a pause lets one request through, and the rest once it is answered', async () => {
    const clock = new FakeClock(0);
    const { limiter, pauses } = limiterOf(clock, 6000, 4);
    pauses.set(pause('stack', 1000));
    const probe = await limiter.acquire('license');
    let second: { release(a: boolean | undefined): void } | undefined;
    const waiting = limiter.acquire('inventory').then((a) => (second = a));
    await new Promise((r) => setImmediate(r));
    expect(second).toBeUndefined();
    // Refused again (a 5xx, a failure): still one at a time; the next request is the next probe.
    probe.release(false);
    await waiting;
    let third: unknown;
    const after = limiter.acquire('license').then((a) => (third = a));
    await new Promise((r) => setImmediate(r));
    expect(third).toBeUndefined();
    (second as { release(a: boolean | undefined): void }).release(true);
    await after;
    // Answered: the stack widens back to maxConcurrency.
    const many = await Promise.all([limiter.acquire('a' as never), limiter.acquire('b' as never), limiter.acquire('c' as never)]);
    expect(many).toHaveLength(3);
  });

  it('stopWaiting ends the waits for the budget and for a slot at once, and every later one', async () => {
    // The real clock: the waits below are 60 s long, and the test must not sit through them.
    const { limiter } = limiterOf(realClock, 1, 1);
    const admitted = await limiter.acquire('license'); // the burst of 1, and the only slot
    const forSlot = limiter.acquire('license'); // waits for the slot
    const forBudget = limiter.charge(); // a redirect hop: waits for the budget only (60 s)
    limiter.stopWaiting();
    await expect(forSlot).rejects.toThrow('the stack is stopping');
    await expect(forBudget).rejects.toThrow('the stack is stopping');
    await expect(limiter.acquire('license')).rejects.toThrow('the stack is stopping');
    expect(limiter.stopped.aborted).toBe(true);
    admitted.release(true); // the request in flight is not touched: its slot goes back as usual
  });

  it('an aborted poll\'s places waiting for the budget hold no later request back (issue 37: 2.5 s with a token available)', async () => {
    // While `holding`, a wait lasts until its signal aborts (the poll's requests); after, waits pass on the fake clock.
    const clock = new FakeClock(0);
    let holding = true;
    const held: Clock = {
      now: () => clock.now(),
      sleep: (ms, signal) =>
        holding && signal ? new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })) : clock.sleep(ms),
    };
    const { limiter } = limiterOf(held, 60, 64);
    for (let i = 0; i < 10; i++) (await limiter.acquire('license')).release(true);
    // Four requests of one poll wait for the budget (1 s to 4 s), then the poll is aborted.
    const poll = new AbortController();
    const waiting = Array.from({ length: 4 }, () => limiter.acquire('license', poll.signal));
    await new Promise((r) => setImmediate(r));
    poll.abort();
    for (const w of waiting) await expect(w).rejects.toThrow();
    holding = false;
    clock.t = 1500; // a token and a half back in the bucket
    (await limiter.acquire('license')).release(true);
    // Before: it waited until 4 s, behind the places given back.
    expect(clock.sleeps).toEqual([]);
    expect(clock.now()).toBe(1500);
  });

  it('releases the concurrency slot when the wait is aborted', async () => {
    const clock = new FakeClock(0);
    const { limiter, pauses } = limiterOf(clock, 6000, 1);
    pauses.set(pause('stack', 5000));
    const ctl = new AbortController();
    ctl.abort();
    await expect(limiter.acquire('license', ctl.signal)).rejects.toThrow();
    const admitted = await limiter.acquire('license');
    admitted.release(true);
  });
});
