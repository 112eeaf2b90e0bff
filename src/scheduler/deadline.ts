/**
 * The time bound of one poll: a poll of a group may take at most the group's interval, all of its
 * requests, retries, back-off, budget and Retry-After waits included (docs/design.md, "A poll takes
 * at most its interval"). It aborts the poll's requests through the signal they already take; the
 * runner tells this abort from a shutdown by the signal's reason and records it as a `timeout`.
 */
import type { RequestContext } from '../api/request-context.js';
import { CmdbError } from '../errors.js';

/** The reason of a poll signal aborted by its deadline; `stalled` when a read that may outlast its interval stopped moving. */
export class PollDeadlineReached extends Error {
  constructor(
    readonly seconds: number,
    readonly stalled = false,
  ) {
    super(stalled ? `the poll made no progress for ${seconds}s` : `the poll did not finish within its ${seconds}s interval`);
  }
}

/** A poll cut off at its deadline: outcome `timeout`, the endpoint reports down. */
export class PollTimeoutError extends CmdbError {
  readonly outcome = 'timeout' as const;
  constructor(endpoint: string, seconds: number, stalled = false) {
    super(
      'CMDB_TIMEOUT',
      `poll of ${endpoint}`,
      stalled
        ? `no page of the scan arrived for ${seconds}s (every attempt, retry and wait of a page included); cut off and reported down`
        : `not finished within its ${seconds}s interval (attempts, retries, back-off and rate-limit waits included); cut off and reported down`,
    );
  }
}

/** The deadline of `signal`, when it is a poll signal that its deadline aborted. */
export function deadlineReached(signal: AbortSignal | undefined): PollDeadlineReached | undefined {
  return signal?.aborted && signal.reason instanceof PollDeadlineReached ? signal.reason : undefined;
}

export interface PollDeadline {
  /** Aborted at the deadline (reason PollDeadlineReached) or when `outer` aborts (its reason). */
  readonly signal: AbortSignal;
  /**
   * What the poll's requests carry: the signal, and when it aborts at the latest, so that a wait the
   * CMDB asks for that cannot end before it gives up at once instead of sleeping into the abort.
   */
  readonly context: RequestContext & { readonly signal: AbortSignal };
  /** Stops the timer and lets go of `outer`. */
  dispose(): void;
}

/**
 * A signal that aborts after `seconds` or with `outer`. A real timer: it bounds real I/O, like the
 * per-attempt deadline. Not AbortSignal.any, which leaks listeners on long-lived signals in Node 20.
 */
export function pollDeadline(outer: AbortSignal | undefined, seconds: number): PollDeadline {
  // No read to watch: the progress deadline aborts at `seconds`, as a plain one does.
  return progressDeadline(outer, seconds, 0, () => undefined);
}

/**
 * Like pollDeadline, for a read that may outlast its interval while it makes progress (a full scan
 * of the connector history): at `seconds`, and from then on, it aborts only once `idle` (seconds
 * since the read last moved; undefined when no read runs) reaches `stallSeconds`.
 */
export function progressDeadline(outer: AbortSignal | undefined, seconds: number, stallSeconds: number, idle: () => number | undefined): PollDeadline {
  const ctl = new AbortController();
  const onOuter = () => ctl.abort(outer?.reason);
  if (outer?.aborted) onOuter();
  else outer?.addEventListener('abort', onOuter, { once: true });
  let timer: NodeJS.Timeout;
  const check = () => {
    const still = idle();
    const left = still === undefined ? 0 : stallSeconds - still;
    if (left <= 0) {
      ctl.abort(still === undefined ? new PollDeadlineReached(seconds) : new PollDeadlineReached(stallSeconds, true));
      return;
    }
    timer = setTimeout(check, Math.max(1000, left * 1000));
    timer.unref();
  };
  timer = setTimeout(check, seconds * 1000);
  timer.unref();
  // A wait the CMDB asks for must end before the read would count as stuck.
  const startedAt = Date.now();
  const deadline = () => Math.max(startedAt + seconds * 1000, Date.now() + (stallSeconds - (idle() ?? 0)) * 1000);
  return {
    signal: ctl.signal,
    context: { signal: ctl.signal, deadline },
    dispose() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}
