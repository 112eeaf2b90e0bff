/** What one request of a stack goes through before it leaves (StackLimiter), and its in-flight cap (Semaphore). */
import { setMaxListeners } from 'node:events';
import { eitherSignal } from '../signals.js';
import { RequestBudget, type BudgetState, type Place } from './budget.js';
import { abortReason, wakeOrAbort, type Clock } from './clock.js';
import type { GatePass, PauseKey, Pauses } from './pauses.js';

/** FIFO counting semaphore for the in-flight cap. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private max: number) {}

  /** A new cap (a reload in place): waiters that now fit are let in. */
  resize(max: number): void {
    this.max = Math.max(1, max);
    while (this.active < this.max && this.waiters.length > 0) {
      this.active++;
      this.waiters.shift()?.();
    }
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.active < this.max) {
      this.active++;
      return Promise.resolve();
    }
    return wakeOrAbort(signal, (grant) => {
      this.waiters.push(grant);
      return () => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
      };
    });
  }

  release(): void {
    // The slot passes straight to the next waiter, so `active` stays the same.
    if (this.active <= this.max && this.waiters.length > 0) (this.waiters.shift() as () => void)();
    else this.active = Math.max(0, this.active - 1);
  }
}

export interface StackLimiterOptions {
  ratePerMinute: number;
  maxConcurrency: number;
  clock: Clock;
  pauses: Pauses;
  /** The budget the stack's previous runtime left (on reload). */
  inherited?: BudgetState;
  /** Called with the seconds spent waiting for the budget or a pause (not for a concurrency slot). */
  onWait: (seconds: number) => void;
  /** Told each place the budget lets leave: when its take planned it at the earliest, and when it left (ms). */
  onGrant?: (plannedAt: number, at: number) => void;
}

/** A request let through: it holds a slot and a place that left. */
export interface Admitted {
  /** The request really left at `at` (ms): the window counts it from then. */
  sent(at: number): void;
  /** Ms it waited for a pause and the budget before it was let through. */
  readonly waitedMs: number;
  /** The slot goes back; `answered` (see GatePass) ends or keeps the probing after a pause. */
  release(answered: boolean | undefined): void;
}

/**
 * What one request of the stack goes through before it leaves, in this order: the pauses (pauses.ts:
 * its group's and the stack's, and after a pause one request at a time), a concurrency slot, and its
 * place in the budget (budget.ts). A pause set while it waited for the budget sends it back to the pauses.
 */
export class StackLimiter {
  private readonly budget: RequestBudget;
  private readonly slots: Semaphore;
  private readonly clock: Clock;
  private readonly pauses: Pauses;
  private readonly onWait: (seconds: number) => void;
  private readonly onGrant: ((plannedAt: number, at: number) => void) | undefined;
  /** Aborted by stopWaiting(): every wait for the budget, a pause or a slot ends, now and later. */
  private readonly stopping = new AbortController();

  constructor(opts: StackLimiterOptions) {
    this.clock = opts.clock;
    this.pauses = opts.pauses;
    this.onWait = opts.onWait;
    this.onGrant = opts.onGrant;
    this.budget = new RequestBudget(opts.ratePerMinute, opts.clock.now(), opts.inherited);
    this.slots = new Semaphore(Math.max(1, opts.maxConcurrency));
    // Every waiting request listens for the stop (a fan-out may have hundreds waiting): not a leak.
    setMaxListeners(0, this.stopping.signal);
  }

  /** New limits (a reload in place): the spent budget and the requests in flight stay. */
  reconfigure(ratePerMinute: number, maxConcurrency: number): void {
    this.budget.setRate(ratePerMinute, this.clock.now());
    this.slots.resize(maxConcurrency);
  }

  /** The spent budget, for the next runtime of this stack. */
  state(): BudgetState {
    return this.budget.state(this.clock.now());
  }

  /**
   * The stack stops (shutdown, removal, a restart on reload): every wait for the budget, a pause or a
   * slot gives up, now and later, rather than wait out the stop's grace period; requests in flight go on.
   */
  stopWaiting(): void {
    this.stopping.abort(new Error('the stack is stopping'));
  }

  /** Aborted once stopWaiting() was called: for the other waits of the stack's requests (back-offs). */
  get stopped(): AbortSignal {
    return this.stopping.signal;
  }

  /**
   * Charges one more request to a slot already held (a redirect hop of the same attempt): it
   * waits for the budget like any request, but takes no second slot. Returns what marks when it left.
   */
  async charge(signal?: AbortSignal): Promise<(at: number) => void> {
    const either = eitherSignal(this.stopping.signal, signal);
    let waited = 0;
    try {
      const place = (await this.waitForBudget(undefined, either.signal, (ms) => (waited += ms))) as Place;
      return (at) => this.budget.sentAt(place, at);
    } finally {
      either.dispose();
      if (waited > 0) this.onWait(waited / 1000);
    }
  }

  async acquire(key: PauseKey, signal?: AbortSignal): Promise<Admitted> {
    const either = eitherSignal(this.stopping.signal, signal);
    let waited = 0;
    const count = (ms: number) => (waited += ms);
    try {
      for (;;) {
        const gate = await this.pauses.pass(key, either.signal, count);
        let slot = false;
        let place: Place | undefined;
        try {
          await this.slots.acquire(either.signal);
          slot = true;
          place = await this.waitForBudget(key, either.signal, count);
        } catch (err) {
          if (slot) this.slots.release();
          gate.done(undefined);
          throw err;
        }
        if (place) return this.admitted(place, gate, waited);
        // A pause began while it waited for the budget: back to the pauses, its place given back.
        this.slots.release();
        gate.done(undefined);
      }
    } finally {
      either.dispose();
      if (waited > 0) this.onWait(waited / 1000);
    }
  }

  private admitted(place: Place, gate: GatePass, waitedMs: number): Admitted {
    let released = false;
    return {
      waitedMs,
      sent: (at) => this.budget.sentAt(place, at),
      release: (answered) => {
        if (released) return;
        released = true;
        this.slots.release();
        gate.done(answered);
      },
    };
  }

  /** Waits for a place in the budget; undefined when a pause of `key` began meanwhile (the place is given back). */
  private async waitForBudget(key: PauseKey | undefined, signal: AbortSignal, onWait: (ms: number) => void): Promise<Place | undefined> {
    const place = this.budget.take(this.clock.now());
    // When the bucket let it go at the earliest, as planned at its take (leave() moves `at` on to when it leaves).
    const plannedAt = place.at;
    try {
      for (;;) {
        const now = this.clock.now();
        if (key !== undefined && this.pauses.until(key) > now) {
          this.budget.cancel(place, now);
          return undefined;
        }
        const wait = this.budget.leave(place, now);
        if (wait <= 0) {
          this.onGrant?.(plannedAt, now);
          return place;
        }
        await this.clock.sleep(wait, signal);
        onWait(wait);
      }
    } catch (err) {
      this.budget.cancel(place, this.clock.now());
      throw err;
    }
  }
}
