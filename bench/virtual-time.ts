/**
 * Simulated time for the request-budget cell: a clock whose sleeps and cron firings wait for the
 * harness to move time, and a dispatcher wrapper that counts the requests in flight, so that time
 * moves only while the exporter has nothing to do but wait (a request on loopback takes no
 * simulated time; every wait for the budget, a pacer slot or the next poll takes exactly its length).
 */
import type { Dispatcher } from 'undici';
import type { Clock } from '../src/cmdb/clock.js';
import type { CronLike, CronTask } from '../src/scheduler/scheduler.js';

interface Timer {
  readonly at: number;
  readonly fire: () => void;
  cancelled?: boolean;
}

export class VirtualTime implements Clock {
  private t: number;
  private timers: Timer[] = [];
  /** Bumped whenever something registers or fires: the harness waits until it stops moving. */
  activity = 0;

  constructor(startMs: number) {
    this.t = startMs;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(new Error('aborted'));
        return;
      }
      const timer = this.at(this.t + Math.max(0, ms), () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      const onAbort = () => {
        timer.cancelled = true;
        reject(new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  at(atMs: number, fire: () => void): Timer {
    const timer: Timer = { at: atMs, fire };
    this.timers.push(timer);
    this.activity++;
    return timer;
  }

  /** When the next timer fires, or undefined when none is left. */
  next(): number | undefined {
    this.timers = this.timers.filter((t) => !t.cancelled);
    return this.timers.length === 0 ? undefined : Math.min(...this.timers.map((t) => t.at));
  }

  /** Moves to `toMs` and fires every timer due by then, oldest first. */
  advance(toMs: number): void {
    this.t = Math.max(this.t, toMs);
    const due = this.timers.filter((t) => !t.cancelled && t.at <= this.t).sort((a, b) => a.at - b.at);
    this.timers = this.timers.filter((t) => !due.includes(t));
    for (const t of due) t.fire();
    if (due.length > 0) this.activity++;
  }

  /** A CronLike that fires `nextRun(name, now)` on this clock, again and again. */
  cron(nextRun: (name: string, nowMs: number) => number): CronLike {
    return {
      schedule: (_expression, run, name): CronTask => {
        let current: Timer | undefined;
        let stopped = false;
        const arm = () => {
          current = this.at(nextRun(name, this.t), () => {
            if (stopped) return;
            arm();
            run();
          });
        };
        arm();
        return {
          stop: () => {
            stopped = true;
            if (current) current.cancelled = true;
          },
        };
      },
    };
  }
}

/** Wraps a dispatcher so that `inFlight()` tells how many requests have not finished yet. */
export function countingDispatcher(inner: Dispatcher): { dispatcher: Dispatcher; inFlight: () => number } {
  let count = 0;
  const ends = new Set(['onComplete', 'onError', 'onResponseEnd', 'onResponseError']);
  const dispatcher = inner.compose((dispatch) => (opts, handler) => {
    count++;
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      // The body's consumer runs after the last chunk: let it finish first.
      setImmediate(() => count--);
    };
    const wrapped = new Proxy(handler, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => unknown;
        if (typeof prop === 'string' && ends.has(prop)) {
          return (...args: unknown[]) => {
            end();
            return fn.apply(target, args);
          };
        }
        return fn.bind(target);
      },
    });
    return dispatch(opts, wrapped);
  });
  return { dispatcher, inFlight: () => count };
}

/** Resolves once nothing happened for `quietChecks` checks `checkMs` apart and no request is in flight. */
export async function settle(time: VirtualTime, inFlight: () => number, quietChecks = 4, checkMs = 2): Promise<void> {
  let quiet = 0;
  let seen = time.activity;
  // Bounded: a request that never ends would otherwise hold the cell for ever.
  for (let i = 0; quiet < quietChecks && i < 30_000; i++) {
    await new Promise((resolve) => setTimeout(resolve, checkMs));
    if (inFlight() > 0 || time.activity !== seen) {
      quiet = 0;
      seen = time.activity;
    } else quiet++;
  }
}
