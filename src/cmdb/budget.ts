/**
 * The client-side request budget of one stack: a token bucket (requests a minute, small burst), a
 * rolling window that keeps any WINDOW_MS at or below the rate counted from when requests really
 * left, and a cap on requests in flight. Token requests, retries and redirect hops draw on the same
 * budget, so the stack never sends more than its configured rate; a reload hands the spent budget
 * to the stack's new runtime (BudgetState) instead of starting with a full one. The pauses a server
 * asks for are src/cmdb/pauses.ts; StackLimiter puts the three in order for one request.
 */
import { setMaxListeners } from 'node:events';
import { eitherSignal } from '../signals.js';
import { abortReason, type Clock } from './clock.js';
import type { GatePass, PauseKey, Pauses } from './pauses.js';

/** Burst size for a budget of `ratePerMinute`: ten seconds' worth, at most 10, at least 1. */
export function burstFor(ratePerMinute: number): number {
  return Math.max(1, Math.min(10, Math.ceil(ratePerMinute / 6)));
}

/**
 * How much longer than a minute the window is. A server counts a request when it arrives, the
 * budget when it leaves; what lies between (connecting, the network, a busy event loop on either
 * side) differs from request to request. With 2 s more, a request may arrive up to 2 s later than
 * the one `rate` requests before it without the server seeing rate + 1 in any 60 s: at
 * rateLimitPerMinute 60 the budget sends at most 60 in any 62 s, about 58 a minute at full load.
 */
export const WINDOW_MARGIN_MS = 2000;
export const WINDOW_MS = 60_000 + WINDOW_MARGIN_MS;

/** What a stack's budget has spent, handed from an old runtime to the new one on reload. */
export interface BudgetState {
  readonly tokens: number;
  readonly updatedAt: number;
  /** When the requests of the last window left (ms), oldest first. */
  readonly sendTimes: readonly number[];
}

/** One request's place in line: when it may leave at the earliest. Handed back by `cancel` if it never does. */
export interface Place {
  at: number;
  /** Set once it left: its entry in the window, moved to the time it really left. */
  sent?: { at: number };
}

/**
 * Token bucket with places in line: taking a place may drive the balance below zero, and the
 * request waits until it is back at zero, so waiters keep their order without a queue of their own.
 * On top, no request leaves while the window already holds `rate` requests: the burst alone would
 * let one minute reach rate + burst. The window counts when requests really left (`sentAt`), not
 * when they were planned to: a place whose time came while its request could not leave (a timer
 * that fired late, a pause) is checked again against what really left before it goes.
 */
export class RequestBudget {
  private capacity: number;
  private perMs: number;
  private windowLimit: number;
  private tokens: number;
  private updatedAt: number;
  /** Requests that left within the last window, by the time they left. */
  private sent: Array<{ at: number }> = [];
  /** Places taken and not left yet, in order. */
  private line: Place[] = [];
  /** The latest time a place was planned for or left at: a new place never goes before it (first come, first served). */
  private latest = 0;

  constructor(ratePerMinute: number, now: number, inherited?: BudgetState) {
    this.capacity = burstFor(ratePerMinute);
    this.perMs = ratePerMinute / 60_000;
    this.windowLimit = Math.max(1, Math.floor(ratePerMinute));
    this.tokens = this.capacity;
    this.updatedAt = now;
    if (inherited) {
      // A changed rate keeps what was spent: never more tokens than the new burst allows.
      this.tokens = Math.min(this.capacity, inherited.tokens);
      this.updatedAt = Math.min(now, inherited.updatedAt);
      this.sent = [...inherited.sendTimes].sort((a, b) => a - b).map((at) => ({ at }));
      this.trim(now);
    }
  }

  /** A new rate (a reload in place): what was spent stays. */
  setRate(ratePerMinute: number, now: number): void {
    this.refill(now);
    this.capacity = burstFor(ratePerMinute);
    this.perMs = ratePerMinute / 60_000;
    this.windowLimit = Math.max(1, Math.floor(ratePerMinute));
    this.tokens = Math.min(this.capacity, this.tokens);
  }

  get burst(): number {
    return this.capacity;
  }

  /** Takes a place in line; `at` is when it may leave (ms, never before `now`). */
  take(now: number): Place {
    this.refill(now);
    this.trim(now);
    this.tokens -= 1;
    const deficitMs = this.tokens < 0 ? Math.ceil(-this.tokens / this.perMs) : 0;
    const place: Place = { at: Math.max(now + deficitMs, this.latest) };
    place.at = this.windowFree(place.at, now, this.line.length);
    this.latest = place.at;
    this.line.push(place);
    return place;
  }

  /** Takes a place; returns how many ms the caller must wait before sending (a place never handed back). */
  reserve(now: number): number {
    const place = this.take(now);
    const wait = place.at - now;
    if (wait <= 0) this.leave(place, now);
    return wait;
  }

  /**
   * At `now`: 0 when `place` may leave now (the window then counts it as sent at `now` until
   * `sentAt` moves it), else the ms to wait before asking again.
   */
  leave(place: Place, now: number): number {
    this.trim(now);
    const i = this.line.indexOf(place);
    // Places ahead that have not left yet will leave about now: the window counts them too.
    place.at = Math.max(place.at, this.windowFree(now, now, Math.max(0, i)));
    this.latest = Math.max(this.latest, place.at);
    if (place.at > now) return place.at - now;
    if (i >= 0) this.line.splice(i, 1);
    place.sent = { at: now };
    this.insert(place.sent);
    return 0;
  }

  /** The request of `place` really left at `at`: the window counts it from then. */
  sentAt(place: Place, at: number): void {
    const entry = place.sent;
    if (!entry || at <= entry.at) return;
    entry.at = at;
    // Later than it was: it moves towards the end, where the newest are.
    let i = this.sent.indexOf(entry);
    while (i >= 0 && i + 1 < this.sent.length && (this.sent[i + 1] as { at: number }).at < at) {
      this.sent[i] = this.sent[i + 1] as { at: number };
      this.sent[++i] = entry;
    }
  }

  /** Gives back a place that was never used (its wait was aborted): its own, no other. */
  cancel(place: Place, now: number): void {
    const i = this.line.indexOf(place);
    if (i < 0 || place.sent) return;
    this.line.splice(i, 1);
    this.refill(now);
    this.tokens = Math.min(this.capacity, this.tokens + 1);
  }

  /** What has been spent, for the stack's next runtime (a reload does not refill the budget). */
  state(now: number): BudgetState {
    this.refill(now);
    this.trim(now);
    return { tokens: this.tokens, updatedAt: this.updatedAt, sendTimes: this.sent.map((e) => e.at) };
  }

  /** Requests that could leave right now without waiting. */
  available(now: number): number {
    this.refill(now);
    return Math.max(0, Math.floor(this.tokens));
  }

  /**
   * The earliest time from `from` at which one more request keeps every window at or below the
   * rate, given what left and the first `ahead` places in line (they leave before it, at `now` at
   * the earliest: what left did so by `now`, so the two are in order one after the other).
   */
  private windowFree(from: number, now: number, ahead: number): number {
    const total = this.sent.length + ahead;
    if (total < this.windowLimit) return from;
    // The `windowLimit`-th request before this one must have left a whole window earlier.
    const k = total - this.windowLimit;
    const before = k < this.sent.length ? (this.sent[k] as { at: number }).at : Math.max((this.line[k - this.sent.length] as Place).at, now);
    return Math.max(from, before + WINDOW_MS);
  }

  private insert(entry: { at: number }): void {
    let i = this.sent.length;
    while (i > 0 && (this.sent[i - 1] as { at: number }).at > entry.at) i--;
    this.sent.splice(i, 0, entry);
  }

  private refill(now: number): void {
    if (now > this.updatedAt) this.tokens = Math.min(this.capacity, this.tokens + (now - this.updatedAt) * this.perMs);
    this.updatedAt = Math.max(this.updatedAt, now);
  }

  /** Drops what left more than a window ago: it can no longer share a window with a new request. */
  private trim(now: number): void {
    let drop = 0;
    while (drop < this.sent.length && (this.sent[drop] as { at: number }).at <= now - WINDOW_MS) drop++;
    if (drop > 0) this.sent.splice(0, drop);
  }
}

/** FIFO counting semaphore for the in-flight cap. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private max: number) {}

  get inFlight(): number {
    return this.active;
  }

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
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(abortReason(signal as AbortSignal));
      };
      this.waiters.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
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
 * What one request of the stack goes through before it leaves, in this order: the pauses (its
 * group's and the stack's, and after a pause one request at a time), a concurrency slot, and its
 * place in the budget. A pause set while it waited for the budget sends it back to the pauses.
 */
export class StackLimiter {
  private readonly budget: RequestBudget;
  private readonly slots: Semaphore;
  private readonly clock: Clock;
  private readonly pauses: Pauses;
  private readonly onWait: (seconds: number) => void;
  /** Aborted by stopWaiting(): every wait for the budget, a pause or a slot ends, now and later. */
  private readonly stopping = new AbortController();

  constructor(opts: StackLimiterOptions) {
    this.clock = opts.clock;
    this.pauses = opts.pauses;
    this.onWait = opts.onWait;
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
   * The stack stops (shutdown, removal, a restart on reload): requests that wait for the budget, a
   * pause or a concurrency slot give up at once, and so does every later one; requests in flight
   * go on. Nothing waits out the stop's grace period for a request it would never send.
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
        try {
          await this.slots.acquire(either.signal);
        } catch (err) {
          gate.done(undefined);
          throw err;
        }
        let place: Place | undefined;
        try {
          place = await this.waitForBudget(key, either.signal, count);
        } catch (err) {
          this.slots.release();
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
    try {
      for (;;) {
        const now = this.clock.now();
        if (key !== undefined && this.pauses.until(key) > now) {
          this.budget.cancel(place, now);
          return undefined;
        }
        const wait = this.budget.leave(place, now);
        if (wait <= 0) return place;
        await this.clock.sleep(wait, signal);
        onWait(wait);
      }
    } catch (err) {
      this.budget.cancel(place, this.clock.now());
      throw err;
    }
  }
}
