/**
 * The time bound of one poll: a poll of a group may take at most the group's interval, all of its
 * requests, retries, back-off, budget and Retry-After waits included. Without it a hanging endpoint
 * kept `cmdb_endpoint_up 1` for timeout × (retries + 1) plus back-off, over three minutes at the
 * defaults against a one-minute interval, while its data stopped moving.
 *
 * The bound aborts the poll's requests through the signal they already take; the runner tells this
 * abort from a shutdown by the signal's reason and records it as a `timeout`.
 */
import { markDeadline } from '../cmdb/clock.js';
import { CmdbError } from '../errors.js';

/** The reason of a poll signal aborted by its deadline. */
export class PollDeadlineReached extends Error {
  constructor(readonly seconds: number) {
    super(`the poll did not finish within its ${seconds}s interval`);
  }
}

/** A poll cut off at its deadline: outcome `timeout`, the endpoint reports down. */
export class PollTimeoutError extends CmdbError {
  readonly outcome = 'timeout' as const;
  constructor(endpoint: string, seconds: number) {
    super(
      'CMDB_TIMEOUT',
      `poll of ${endpoint}`,
      `not finished within its ${seconds}s interval (attempts, retries, back-off and rate-limit waits included); cut off and reported down`,
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
  /** Stops the timer and lets go of `outer`. */
  dispose(): void;
}

/**
 * A signal that aborts after `seconds` or with `outer`. A real timer: it bounds real I/O, like the
 * per-attempt deadline. Not AbortSignal.any, which leaks listeners on long-lived signals in Node 20.
 */
export function pollDeadline(outer: AbortSignal | undefined, seconds: number): PollDeadline {
  const ctl = new AbortController();
  const onOuter = () => ctl.abort(outer?.reason);
  if (outer?.aborted) onOuter();
  else outer?.addEventListener('abort', onOuter, { once: true });
  const timer = setTimeout(() => ctl.abort(new PollDeadlineReached(seconds)), seconds * 1000);
  markDeadline(ctl.signal, Date.now() + seconds * 1000);
  timer.unref();
  return {
    signal: ctl.signal,
    dispose() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}
