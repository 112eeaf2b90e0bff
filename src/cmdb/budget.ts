/**
 * The client-side request budget of one stack: a token bucket (requests a minute, small burst) that a
 * server Retry-After can pause, a rolling window that keeps any 60 s at or below the rate (burst
 * included), and a cap on requests in flight. Token requests, retries and redirect hops draw on the
 * same budget, so the stack never sends more than its configured rate; a reload hands the state of
 * the bucket to the stack's new runtime (BudgetState) instead of starting with a full one.
 */
import { eitherSignal } from '../signals.js';
import { abortReason, type Clock } from './clock.js';

/** Burst size for a budget of `ratePerMinute`: ten seconds' worth, at most 10, at least 1. */
export function burstFor(ratePerMinute: number): number {
  return Math.max(1, Math.min(10, Math.ceil(ratePerMinute / 6)));
}

const WINDOW_MS = 60_000;

/** What a stack's budget has spent, handed from an old runtime to the new one on reload. */
export interface BudgetState {
  readonly tokens: number;
  readonly updatedAt: number;
  /** When the reservations of the last 60 s (and those still waiting) leave (ms), oldest first. */
  readonly sendTimes: readonly number[];
}

/**
 * The budget as an earlier process left it, from the send times it recorded (--storage.path): the
 * sends of the last 60 s fill the window, and the bucket is taken as empty at the newest of them
 * (it refills from there), so a restart never adds a burst to a minute that was already spent.
 */
export function budgetFromSends(sendTimes: readonly number[], now: number): BudgetState {
  const recent = sendTimes.filter((at) => at > now - WINDOW_MS);
  const newest = recent.reduce((a, b) => Math.max(a, b), -Infinity);
  return { tokens: 0, updatedAt: Number.isFinite(newest) ? Math.min(now, newest) : now - WINDOW_MS, sendTimes: recent };
}

/**
 * The budget when what an earlier process sent is not known (its record was lost or unreadable): as
 * if it had sent a whole minute's worth just now. No request leaves for a minute, and no minute
 * around the restart goes over the rate.
 */
export function spentBudget(ratePerMinute: number, now: number): BudgetState {
  return { tokens: 0, updatedAt: now, sendTimes: Array.from({ length: Math.max(1, Math.floor(ratePerMinute)) }, () => now) };
}

/** One request's place in the budget: when it may leave. Handed back by `cancel` if it never does. */
export interface Reservation {
  readonly at: number;
}

/**
 * Token bucket with reservations: taking a request may drive the balance below zero, and the caller
 * waits until it is back at zero. That keeps waiters in order without a queue. On top, no request
 * leaves earlier than 60 s after the `ratePerMinute`-th request before it: the burst alone would let
 * one minute reach rate + burst (59 at the default 50), leaving the account's other users too little.
 *
 * The window holds every reservation of the last 60 s by time, not the last `rate` by count, and
 * reservations leave in the order they were taken (a new one never before the latest): a waiter that
 * gives up removes its own reservation only, so the requests still waiting keep their places and no
 * later one is planned into a minute that is already full.
 */
export class TokenBucket {
  readonly capacity: number;
  private readonly perMs: number;
  private readonly windowLimit: number;
  private tokens: number;
  private updatedAt: number;
  private pausedUntil = 0;
  /** Reservations whose send time is within the last 60 s or still ahead, by send time. */
  private window: Reservation[] = [];

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
      this.window = [...inherited.sendTimes].sort((a, b) => a - b).map((at) => ({ at }));
      this.trim(now);
    }
  }

  /** Takes one request; returns when it may leave (ms since the epoch, never before `now`). */
  take(now: number): Reservation {
    this.refill(now);
    this.trim(now);
    this.tokens -= 1;
    const deficitMs = this.tokens < 0 ? -this.tokens / this.perMs : 0;
    // Nothing accrues while paused, so the deficit is paid off only after the pause.
    let sendAt = now + Math.ceil(Math.max(now, this.pausedUntil) + deficitMs - now);
    const latest = this.window[this.window.length - 1];
    if (latest) sendAt = Math.max(sendAt, latest.at);
    // The `windowLimit`-th reservation before this one must be a full minute old when it leaves.
    const full = this.window.length >= this.windowLimit ? this.window[this.window.length - this.windowLimit] : undefined;
    if (full) sendAt = Math.max(sendAt, full.at + WINDOW_MS);
    const reservation = { at: sendAt };
    this.window.push(reservation);
    return reservation;
  }

  /** Takes one request; returns how many ms the caller must wait before sending it. */
  reserve(now: number): number {
    return this.take(now).at - now;
  }

  /** Returns a reservation that was never used (its wait was aborted): its own, no other. */
  cancel(reservation: Reservation, now: number): void {
    const i = this.window.indexOf(reservation);
    if (i < 0) return;
    this.window.splice(i, 1);
    this.refill(now);
    this.tokens = Math.min(this.capacity, this.tokens + 1);
  }

  /** What has been spent, for the stack's next runtime (a reload does not refill the budget). */
  state(now: number): BudgetState {
    this.refill(now);
    this.trim(now);
    return { tokens: this.tokens, updatedAt: this.updatedAt, sendTimes: this.window.map((r) => r.at) };
  }

  /** The server asked us to wait (Retry-After): no request leaves and nothing accrues until `until`. */
  pause(until: number, now: number): void {
    this.refill(now);
    this.pausedUntil = Math.max(this.pausedUntil, until);
  }

  /** Ends a pause at once (a reload: the operator says the server may be asked again). */
  resume(): void {
    this.pausedUntil = 0;
  }

  /** Remaining pause in ms (0 when not paused). */
  pausedFor(now: number): number {
    return Math.max(0, this.pausedUntil - now);
  }

  /** Requests that could leave right now without waiting. */
  available(now: number): number {
    this.refill(now);
    return this.pausedFor(now) > 0 ? 0 : Math.max(0, Math.floor(this.tokens));
  }

  private refill(now: number): void {
    const from = Math.max(this.updatedAt, this.pausedUntil);
    if (now > from) this.tokens = Math.min(this.capacity, this.tokens + (now - from) * this.perMs);
    this.updatedAt = Math.max(this.updatedAt, now);
  }

  /** Drops what left more than a minute ago: it can no longer share a window with a new request. */
  private trim(now: number): void {
    let drop = 0;
    while (drop < this.window.length && (this.window[drop] as Reservation).at <= now - WINDOW_MS) drop++;
    if (drop > 0) this.window.splice(0, drop);
  }
}

/** FIFO counting semaphore for the in-flight cap. */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly max: number) {}

  get inFlight(): number {
    return this.active;
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
    const next = this.waiters.shift();
    // The slot passes straight to the next waiter, so `active` stays the same.
    if (next) next();
    else this.active = Math.max(0, this.active - 1);
  }
}

export interface StackLimiterOptions {
  ratePerMinute: number;
  maxConcurrency: number;
  clock: Clock;
  /** The budget the stack's previous runtime left (on reload). */
  inherited?: BudgetState;
  /** Called with the seconds spent waiting for the budget or a pause (not for a concurrency slot). */
  onWait: (seconds: number) => void;
  /** Told each reservation's send time (ms) when it is taken: a record of what was spent (--storage.path). */
  onReserve?: (atMs: number) => void;
}

/** Both limits of one stack. `acquire` resolves to the release function of the slot it took. */
export class StackLimiter {
  private readonly bucket: TokenBucket;
  private readonly slots: Semaphore;
  private readonly clock: Clock;
  private readonly onWait: (seconds: number) => void;
  private readonly onReserve: (atMs: number) => void;
  /** Aborted by stopWaiting(): every wait for the budget, a pause or a slot ends, now and later. */
  private readonly stopping = new AbortController();

  constructor(opts: StackLimiterOptions) {
    this.clock = opts.clock;
    this.onWait = opts.onWait;
    this.onReserve = opts.onReserve ?? (() => undefined);
    this.bucket = new TokenBucket(opts.ratePerMinute, opts.clock.now(), opts.inherited);
    this.slots = new Semaphore(Math.max(1, opts.maxConcurrency));
  }

  resume(): void {
    this.bucket.resume();
  }

  pause(until: number): void {
    this.bucket.pause(until, this.clock.now());
  }

  pausedForMs(): number {
    return this.bucket.pausedFor(this.clock.now());
  }

  /** The spent budget, for the next runtime of this stack. */
  state(): BudgetState {
    return this.bucket.state(this.clock.now());
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
   * waits for the budget like any request, but takes no second concurrency slot.
   */
  charge(signal?: AbortSignal): Promise<void> {
    return this.untilStopped(signal, (s) => this.waitForBudget(s));
  }

  async acquire(signal?: AbortSignal): Promise<() => void> {
    await this.untilStopped(signal, async (s) => {
      await this.slots.acquire(s);
      try {
        await this.waitForBudget(s);
      } catch (err) {
        this.slots.release();
        throw err;
      }
    });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.slots.release();
    };
  }

  /** Runs `wait` with a signal aborted by `signal` or by stopWaiting(), whichever comes first. */
  private async untilStopped<T>(signal: AbortSignal | undefined, wait: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const either = eitherSignal(this.stopping.signal, signal);
    try {
      return await wait(either.signal);
    } finally {
      either.dispose();
    }
  }

  /** A reservation, told to onReserve (a cancelled one stays in the record: it over-counts, never under). */
  private take(now: number): Reservation {
    const reservation = this.bucket.take(now);
    this.onReserve(reservation.at);
    return reservation;
  }

  private async waitForBudget(signal?: AbortSignal): Promise<void> {
    let reservation = this.take(this.clock.now());
    let waited = 0;
    try {
      for (;;) {
        const now = this.clock.now();
        // A pause that started while we waited (another request got a 429): our place is given
        // back and taken again behind the pause, so the window counts when we really leave.
        if (this.bucket.pausedFor(now) > 0 && reservation.at < now + this.bucket.pausedFor(now)) {
          this.bucket.cancel(reservation, now);
          reservation = this.take(now);
        }
        const wait = reservation.at - now;
        if (wait <= 0) break;
        await this.clock.sleep(wait, signal);
        waited += wait;
      }
    } catch (err) {
      this.bucket.cancel(reservation, this.clock.now());
      throw err;
    } finally {
      if (waited > 0) this.onWait(waited / 1000);
    }
  }
}
