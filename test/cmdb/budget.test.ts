import { describe, expect, it } from 'vitest';
import { Semaphore, StackLimiter, TokenBucket, burstFor } from '../../src/cmdb/budget.js';
import { realClock } from '../../src/cmdb/clock.js';
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

describe('TokenBucket', () => {
  it('lets the burst through at once, then spaces requests by 60/rate seconds', () => {
    const b = new TokenBucket(60, 0); // burst 10, one a second
    const waits = Array.from({ length: 13 }, () => b.reserve(0));
    expect(waits).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1000, 2000, 3000]);
  });

  it('refills with time up to the burst size only', () => {
    const b = new TokenBucket(60, 0);
    for (let i = 0; i < 10; i++) b.reserve(0);
    expect(b.available(5000)).toBe(5);
    expect(b.available(1_000_000)).toBe(10);
  });

  it('gives back a cancelled reservation', () => {
    const b = new TokenBucket(6, 0); // burst 1, one per 10 s
    expect(b.reserve(0)).toBe(0);
    const waiting = b.take(0);
    expect(waiting.at).toBe(10_000);
    b.cancel(waiting, 0);
    expect(b.reserve(0)).toBe(10_000);
  });

  it('holds every request during a pause and accrues nothing until it ends', () => {
    const b = new TokenBucket(60, 0);
    for (let i = 0; i < 10; i++) b.reserve(0);
    b.pause(30_000, 0);
    expect(b.pausedFor(10_000)).toBe(20_000);
    expect(b.available(10_000)).toBe(0);
    // At 10 s, the next request waits for the rest of the pause plus one refill interval.
    expect(b.reserve(10_000)).toBe(21_000);
    expect(b.pausedFor(31_000)).toBe(0);
  });

  it('keeps the longer of two pauses', () => {
    const b = new TokenBucket(60, 0);
    b.pause(20_000, 0);
    b.pause(5_000, 0);
    expect(b.pausedFor(0)).toBe(20_000);
  });
});

describe('TokenBucket rolling minute', () => {
  /** The most send times in any 60 s window. */
  const busiestMinute = (times: number[]) => Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 60_000).length));

  it('keeps any 60 s at or below the rate, burst included', () => {
    const b = new TokenBucket(50, 0); // burst 9
    const sendTimes = Array.from({ length: 200 }, () => b.reserve(0));
    expect(busiestMinute(sendTimes)).toBe(50);
  });

  it('lets a request go as soon as the oldest of the last `rate` requests is a minute old', () => {
    const b = new TokenBucket(6, 0); // burst 1, one per 10 s
    const times = Array.from({ length: 7 }, () => b.reserve(0));
    // 0, 10 … 50 s from the bucket; the seventh is the first the window holds back as well.
    expect(times).toEqual([0, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
  });

  it('hands what was spent to a new bucket instead of starting full', () => {
    const old = new TokenBucket(50, 0);
    for (let i = 0; i < 50; i++) old.reserve(0);
    const next = new TokenBucket(50, 1000, old.state(1000));
    expect(next.available(1000)).toBe(0);
    const sendTimes = [...old.state(1000).sendTimes, ...Array.from({ length: 20 }, () => 1000 + next.reserve(1000))];
    expect(busiestMinute(sendTimes)).toBe(50);
  });

  it('keeps at most the new burst when the rate shrinks on reload', () => {
    const old = new TokenBucket(60, 0);
    const next = new TokenBucket(6, 0, old.state(0));
    expect(next.available(0)).toBe(1);
  });
});

describe('Semaphore', () => {
  it('admits at most max holders and hands slots over in FIFO order', async () => {
    const s = new Semaphore(2);
    await s.acquire();
    await s.acquire();
    const order: number[] = [];
    const third = s.acquire().then(() => order.push(3));
    const fourth = s.acquire().then(() => order.push(4));
    await Promise.resolve();
    expect(order).toEqual([]);
    expect(s.inFlight).toBe(2);
    s.release();
    await third;
    s.release();
    await fourth;
    expect(order).toEqual([3, 4]);
    expect(s.inFlight).toBe(2);
  });

  it('drops a waiter whose signal aborts, without leaking its slot', async () => {
    const s = new Semaphore(1);
    await s.acquire();
    const ctl = new AbortController();
    const waiting = s.acquire(ctl.signal);
    ctl.abort();
    await expect(waiting).rejects.toThrow();
    s.release();
    expect(s.inFlight).toBe(0);
    await s.acquire();
    expect(s.inFlight).toBe(1);
  });
});

describe('StackLimiter', () => {
  it('waits on the injected clock once the burst is used and reports the wait time', async () => {
    const clock = new FakeClock(0);
    const waited: number[] = [];
    const limiter = new StackLimiter({ ratePerMinute: 6, maxConcurrency: 5, clock, onWait: (s) => waited.push(s) });
    (await limiter.acquire())();
    (await limiter.acquire())();
    (await limiter.acquire())();
    expect(clock.sleeps).toEqual([10_000, 10_000]);
    expect(waited).toEqual([10, 10]);
  });

  it('waits out a pause set while a request already waits', async () => {
    const clock = new FakeClock(0);
    const limiter = new StackLimiter({ ratePerMinute: 6000, maxConcurrency: 5, clock, onWait: () => {} });
    limiter.pause(3000);
    expect(limiter.pausedForMs()).toBe(3000);
    (await limiter.acquire())();
    expect(clock.now()).toBeGreaterThanOrEqual(3000);
    expect(limiter.pausedForMs()).toBe(0);
  });

  it('stopWaiting ends the waits for the budget and for a slot at once, and every later one', async () => {
    // The real clock: the waits below are 60 s long, and the test must not sit through them.
    const limiter = new StackLimiter({ ratePerMinute: 1, maxConcurrency: 1, clock: realClock, onWait: () => {} });
    const release = await limiter.acquire(); // the burst of 1, and the only slot
    const forSlot = limiter.acquire(); // waits for the slot
    const forBudget = limiter.charge(); // a redirect hop: waits for the budget only (60 s)
    limiter.stopWaiting();
    await expect(forSlot).rejects.toThrow('the stack is stopping');
    await expect(forBudget).rejects.toThrow('the stack is stopping');
    await expect(limiter.acquire()).rejects.toThrow('the stack is stopping');
    expect(limiter.stopped.aborted).toBe(true);
    release(); // the request in flight is not touched: its slot goes back as usual
  });

  it('releases the concurrency slot when the budget wait is aborted', async () => {
    const clock = new FakeClock(0);
    const limiter = new StackLimiter({ ratePerMinute: 6000, maxConcurrency: 1, clock, onWait: () => {} });
    limiter.pause(5000);
    const ctl = new AbortController();
    ctl.abort();
    await expect(limiter.acquire(ctl.signal)).rejects.toThrow();
    const release = await limiter.acquire();
    release();
  });
});
