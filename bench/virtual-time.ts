/**
 * Simulated time for the request-budget and saved-queries cells: a clock whose sleeps and cron
 * firings wait for the harness to move time, and a dispatcher wrapper that counts the requests in
 * flight, so that time moves only while the exporter has nothing to do but wait (a request on
 * loopback takes no simulated time; every wait for the budget, a pacer slot or the next poll takes
 * exactly its length). simulatedStack wires the daemon's parts for one stack on such a clock.
 */
import type { Dispatcher } from 'undici';
import type { GroupName } from '../src/api/endpoints.js';
import type { Clock } from '../src/cmdb/clock.js';
import { createDispatcher } from '../src/cmdb/dispatcher.js';
import { openRoad } from '../src/cmdb/road.js';
import { pollSettings } from '../src/config/endpoints.js';
import type { StackConfig } from '../src/config/types.js';
import { nextScheduledRun, Scheduler, type CronLike, type CronTask } from '../src/scheduler/scheduler.js';
import { StackPoller } from '../src/scheduler/stack-poller.js';
import type { SimulatorSize } from '../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { SnapshotStore } from '../src/store/snapshot-store.js';
import { quietParts, simulatorStack } from './stack.js';

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

export interface SimulatedStackOptions {
  /** Where simulated time starts; the simulator's data is made for this instant. */
  readonly startMs: number;
  readonly size: Partial<SimulatorSize>;
  readonly connectorPeriodSeconds: number;
  /** Settings beside the built-in defaults, from the simulator (e.g. its tracked names). */
  readonly stack?: (sim: SimulatorServer) => Partial<StackConfig>;
  readonly staleAfterSeconds: number;
  readonly maxSeries: number;
}

/**
 * The simulator and the daemon's road (client and readers), poller and scheduler for one stack
 * (built-in defaults), all on one VirtualTime. `run` moves time to `endMs` (or until the wall-clock
 * limit), settling before each move and calling `moved(toMs)` once the simulator's data moved;
 * `close` ends it all.
 */
export async function simulatedStack(opts: SimulatedStackOptions) {
  const time = new VirtualTime(opts.startMs);
  const sim = await startSimulator({ host: '127.0.0.1', port: 0, seed: 42, size: opts.size, live: false, now: () => opts.startMs, connectorPeriodSeconds: opts.connectorPeriodSeconds });
  const stack = simulatorStack(sim, opts.stack?.(sim));
  const { instruments, scrubber, logger } = quietParts();
  const store = new SnapshotStore({ instruments, logger });
  const settings = pollSettings(stack);
  store.addStack(stack.name, new Map(settings.enabled.map((e) => [e, { intervalSeconds: 60, staleAfterSeconds: opts.staleAfterSeconds }])), opts.maxSeries);
  const { dispatcher, inFlight } = countingDispatcher(createDispatcher(stack));
  const road = openRoad({ stack, instruments, logger, scrubber, clock: time, dispatcher, enabled: settings.enabled });
  const poller = new StackPoller({ stack, settings, api: road.readers, store, logger, scrubber, now: () => time.now() / 1000, sleep: (ms, signal) => time.sleep(ms, signal) });
  const groupOf = (name: string) => name.slice(name.indexOf('/') + 1) as GroupName;
  const cron = time.cron((name, nowMs) => 1000 * nextScheduledRun(stack.name, groupOf(name), stack.intervals[groupOf(name)], nowMs / 1000));
  const scheduler = new Scheduler({ instruments, logger, cron, initialJitterMs: 0, nowMs: () => time.now() });
  scheduler.add(poller);
  const run = async (endMs: number, maxWallSeconds: number, hooks: { settled?: () => void; moved?: (toMs: number) => void }): Promise<void> => {
    const wallStart = performance.now();
    // Bounded by simulated time and by a wall-clock limit.
    while (time.now() < endMs && performance.now() - wallStart < maxWallSeconds * 1000) {
      await settle(time, inFlight);
      hooks.settled?.();
      const next = time.next();
      if (next === undefined) break;
      const to = Math.min(next, endMs);
      sim.scenario.advance((to - time.now()) / 1000);
      hooks.moved?.(to);
      time.advance(to);
    }
    await settle(time, inFlight);
  };
  const close = async () => {
    await scheduler.stop(0);
    await road.close();
    await sim.close();
  };
  return { time, sim, stack, road, poller, run, close };
}
