/**
 * Spaces the job fetches of one stack (and its saved queries' counts): one start every
 * 60/ratePerMinute seconds, kept across polls, so that hundreds of Actions that ran at the same
 * moment become a steady trickle within the stack's request budget instead of a burst that holds
 * the whole budget for minutes.
 */

import type { Clock } from '../cmdb/clock.js';
import { CmdbAbortedError } from '../errors.js';
import { eitherSignal } from '../signals.js';

/** Waits `ms`; rejects when `signal` aborts (the client's clock waits the same way). */
export type Sleep = Clock['sleep'];

/** Seconds of one slice of a paced poll: what a slice fetched is published when it ends. */
export const SLICE_SECONDS = 15;
/** A paced poll ends by this share of its interval, so it never runs into the next one. */
export const PACED_SHARE = 0.8;

export class Pacer {
  private readonly spacingMs: number;
  /** When the next start may happen (ms). */
  private nextAt = 0;

  constructor(
    ratePerMinute: number,
    /** Milliseconds. */
    private readonly nowMs: () => number,
    private readonly sleep: Sleep,
    /** Told each slot taken (ms). */
    private readonly onSlot?: (slotAt: number) => void,
  ) {
    this.spacingMs = 60_000 / Math.max(1e-9, ratePerMinute);
  }

  /**
   * Takes the next slot and waits for it; false (without waiting) when that slot is after
   * `deadlineMs`: the work stays for a later poll. A wait ends when the stack stops (`stop`:
   * shutdown, reload), and the poll ends then at once (false) instead of pacing on through the
   * removal's grace period; the poll's own abort (its deadline, a removal's end) throws
   * CmdbAbortedError naming `request`, the runner's to judge.
   */
  async take(deadlineMs: number, poll: AbortSignal, stop: AbortSignal | undefined, request: string): Promise<boolean> {
    if (stop?.aborted) return false;
    const now = this.nowMs();
    const slot = Math.max(now, this.nextAt);
    if (slot > deadlineMs) return false;
    this.nextAt = slot + this.spacingMs;
    this.onSlot?.(slot);
    if (slot <= now) return true;
    const waiting = eitherSignal(poll, stop);
    try {
      await this.sleep(slot - now, waiting.signal);
      return true;
    } catch {
      if (poll.aborted) throw new CmdbAbortedError(`pacing of ${request}`);
      return false;
    } finally {
      waiting.dispose();
    }
  }
}
