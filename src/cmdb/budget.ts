/**
 * The client-side request budget of one stack: a token bucket (requests a minute, small burst) and
 * a rolling window that keeps any WINDOW_MS at or below the rate. Token requests, retries and
 * redirect hops draw on it too; a reload hands what was spent to the new runtime (BudgetState).
 */

/** Burst size for a budget of `ratePerMinute`: ten seconds' worth, at most 10, at least 1. */
export function burstFor(ratePerMinute: number): number {
  return Math.max(1, Math.min(10, Math.ceil(ratePerMinute / 6)));
}

/**
 * How much longer than a minute the window is: a request may reach the server up to 2 s later than
 * the one `rate` requests before it without the server seeing rate + 1 in any 60 s (docs/design.md,
 * "The request budget and the server's count").
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

/**
 * The budget as an earlier process left it, from the send times it recorded (--storage.path): the
 * sends of the last window fill it, and the bucket is taken as empty at the newest of them (it
 * refills from there), so a restart never adds a burst to a minute that was already spent.
 */
export function budgetFromSends(sendTimes: readonly number[], now: number): BudgetState {
  const recent = sendTimes.filter((at) => at > now - WINDOW_MS).sort((a, b) => a - b);
  const newest = recent.length > 0 ? (recent[recent.length - 1] as number) : undefined;
  return { tokens: 0, updatedAt: newest === undefined ? now - WINDOW_MS : Math.min(now, newest), sendTimes: recent };
}

/**
 * The budget when what an earlier process sent is not known (its record was lost or unreadable): as
 * if it had sent a whole minute's worth just now. No request leaves for a window, and no minute
 * around the restart goes over the rate.
 */
export function spentBudget(ratePerMinute: number, now: number): BudgetState {
  return { tokens: 0, updatedAt: now, sendTimes: Array.from({ length: Math.max(1, Math.floor(ratePerMinute)) }, () => now) };
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
 * On top, no request leaves while the window already holds `rate` requests (the burst alone would
 * let one minute reach rate + burst), counted from when requests really left (`sentAt`): a place
 * whose time came while it could not leave (a late timer, a pause) is checked again before it goes.
 */
export class RequestBudget {
  private capacity = 0;
  private perMs = 0;
  private windowLimit = 0;
  private tokens = 0;
  private updatedAt: number;
  /** Requests that left within the last window, by the time they left. */
  private sent: Array<{ at: number }> = [];
  /** Places taken and not left yet, in order. */
  private line: Place[] = [];
  /** The latest time a place left at. */
  private lastLeft = -Infinity;

  constructor(ratePerMinute: number, now: number, inherited?: BudgetState) {
    this.updatedAt = now;
    this.setRate(ratePerMinute, now);
    this.tokens = this.capacity;
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

  /** Takes a place in line; `at` is when it may leave (ms, never before `now`). */
  take(now: number): Place {
    this.refill(now);
    this.trim(now);
    this.tokens -= 1;
    const deficitMs = this.tokens < 0 ? Math.ceil(-this.tokens / this.perMs) : 0;
    // First come, first served: never before a place still in line. A place given back (cancel)
    // is out of the line, so it holds no later request back.
    const place: Place = { at: Math.max(now + deficitMs, this.lastLeft, this.lastInLine()) };
    place.at = this.windowFree(place.at, now, this.line.length);
    this.line.push(place);
    return place;
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
    if (place.at > now) return place.at - now;
    if (i >= 0) this.line.splice(i, 1);
    this.lastLeft = Math.max(this.lastLeft, now);
    place.sent = { at: now };
    this.insert(place.sent);
    return 0;
  }

  /** The request of `place` really left at `at`: the window counts it from then. */
  sentAt(place: Place, at: number): void {
    const entry = place.sent;
    if (!entry || at <= entry.at) return;
    entry.at = at;
    // Later than it was: back in order among the newest (unless trimmed already).
    const i = this.sent.indexOf(entry);
    if (i < 0) return;
    this.sent.splice(i, 1);
    this.insert(entry);
  }

  /**
   * Gives back a place that was never used (its wait was aborted, a pause began): its token, and
   * its time, so that a later request is not planned after it. The places behind it keep theirs.
   */
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

  /** When the last place in line may leave (-Infinity with none): a new place does not go before it. */
  private lastInLine(): number {
    let latest = -Infinity;
    for (const p of this.line) latest = Math.max(latest, p.at);
    return latest;
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
