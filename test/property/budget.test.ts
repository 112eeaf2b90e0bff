/**
 * Property: whatever requests ask for the budget, whichever of them give up while they wait (a poll
 * cut off at its deadline, a shutdown) and whatever pauses a server's Retry-After sets, no 60 s
 * window of requests that actually leave holds more than rateLimitPerMinute. Time is virtual: every
 * wait of the limiter runs on a clock the test moves, so a run of minutes takes milliseconds.
 *
 * PROPERTY_RUNS sets the runs (default 200); PROPERTY_SEED replays one.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { StackLimiter } from '../../src/cmdb/limiter.js';
import { Pauses } from '../../src/cmdb/pauses.js';
import { abortReason, type Clock } from '../../src/cmdb/clock.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
const SEED = process.env.PROPERTY_SEED === undefined ? {} : { seed: Number(process.env.PROPERTY_SEED) };

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
}

/** Sleeps wait until the test moves time past them; an abort rejects at once. */
class VirtualClock implements Clock {
  t = 0;
  private seq = 0;
  private timers: Timer[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const timer: Timer = {
        at: this.t + Math.max(0, ms),
        seq: this.seq++,
        fire: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.timers = this.timers.filter((x) => x !== timer);
        reject(abortReason(signal as AbortSignal));
      };
      this.timers.push(timer);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Fires every timer due by `until` in order, letting the promise chains they start run. */
  async advanceTo(until: number): Promise<void> {
    await settle();
    for (;;) {
      let due: Timer | undefined;
      for (const x of this.timers) if (x.at <= until && (!due || x.at < due.at || (x.at === due.at && x.seq < due.seq))) due = x;
      if (!due) break;
      this.timers.splice(this.timers.indexOf(due), 1);
      this.t = Math.max(this.t, due.at);
      due.fire();
      await settle();
    }
    this.t = Math.max(this.t, until);
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** The most sends in any 60 s window [t, t + 60 s). */
function busiestMinute(sends: readonly number[]): number {
  const sorted = [...sends].sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[hi] as number) - (sorted[lo] as number) >= 60_000) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

type Op =
  | { kind: 'request'; at: number; n: number }
  | { kind: 'abort'; at: number; pick: number }
  | { kind: 'pause'; at: number; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('request' as const), at: fc.integer({ min: 0, max: 240_000 }), n: fc.integer({ min: 1, max: 20 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('abort' as const), at: fc.integer({ min: 0, max: 240_000 }), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('pause' as const), at: fc.integer({ min: 0, max: 240_000 }), ms: fc.integer({ min: 500, max: 30_000 }) }),
  },
);

describe('request budget under aborts', () => {
  test.prop(
    {
      rate: fc.constantFrom(6, 12, 50, 60),
      concurrency: fc.constantFrom(1, 4, 100),
      ops: fc.array(op, { minLength: 20, maxLength: 120, size: 'max' }),
    },
    { numRuns: RUNS, ...SEED },
  )('no 60 s window of actual sends is above rateLimitPerMinute', async ({ rate, concurrency, ops }) => {
    const clock = new VirtualClock();
    const pauses = new Pauses(clock);
    const limiter = new StackLimiter({ ratePerMinute: rate, maxConcurrency: concurrency, clock, pauses, onWait: () => {} });
    const sends: number[] = [];
    const waiting: AbortController[] = [];
    let requested = 0;
    let aborted = 0;
    for (const o of [...ops].sort((a, b) => a.at - b.at)) {
      await clock.advanceTo(o.at);
      if (o.kind === 'request') {
        for (let i = 0; i < o.n; i++) request();
      } else if (o.kind === 'abort') {
        if (waiting.length > 0) waiting[o.pick % waiting.length]?.abort(new Error('poll deadline'));
      } else {
        pauses.set({ scope: 'stack', until: clock.now() + o.ms, status: 429, endpoint: 'license', request: 'GET /license' });
      }
    }
    function request(): void {
        requested++;
        const ctl = new AbortController();
        waiting.push(ctl);
        limiter.acquire('license', ctl.signal).then(
          (admitted) => {
            waiting.splice(waiting.indexOf(ctl), 1);
            sends.push(clock.now());
            admitted.sent(clock.now());
            // A request holds its slot a little while: the next one does not leave in the same instant.
            void clock.sleep(100).then(() => admitted.release(true));
          },
          () => {
            waiting.splice(waiting.indexOf(ctl), 1);
            aborted++;
          },
        );
    }
    // Let every request that still waits leave (at 6 a minute, 2,400 requests take under 7 hours).
    for (let hour = 0; hour < 8 && waiting.length > 0; hour++) await clock.advanceTo(clock.now() + 3_600_000);
    expect(waiting).toHaveLength(0);
    // Every request either left or gave up: none is lost in the limiter.
    expect(sends.length + aborted).toBe(requested);
    expect(busiestMinute(sends)).toBeLessThanOrEqual(rate);
  },
  // Time is virtual, so a run costs CPU only (~15 ms, ~400 requests); the bound is the pipeline
  // test's 500 ms a run, which holds with a few percent of a core (npm test on a loaded machine
  // gave it ~10 % and it ran past vitest's default 20 s).
  RUNS * 500);
});
