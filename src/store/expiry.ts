/**
 * The timer that drops the series of failing endpoints at their stale limit, scraped or not: set
 * for the earliest limit after every change, so that the log line and the series count say so on
 * time.
 */
export class ExpiryTimer {
  private timer: NodeJS.Timeout | undefined;
  /** The stale limit the timer is set for (unix seconds); Infinity when none is set. */
  private at = Infinity;

  /**
   * `now` (unix seconds): without it (unit tests) nothing is timed, expiry happens only when the
   * store is told to expire. `expire` is called at the limit with the time then.
   */
  constructor(
    private readonly now: (() => number) | undefined,
    private readonly expire: (now: number) => void,
  ) {}

  /** Sets the timer for `next` (unix seconds; Infinity: none). */
  set(next: number): void {
    const now = this.now;
    if (!now || next === this.at) return;
    this.close();
    this.at = next;
    if (next === Infinity) return;
    // Just past the limit: a series is stale once its age is above it, not at it.
    const delayMs = Math.min(Math.max(0, (next - now()) * 1000) + 10, 2 ** 31 - 1);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.at = Infinity;
      this.expire(now());
    }, delayMs);
    this.timer.unref();
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.at = Infinity;
  }
}
