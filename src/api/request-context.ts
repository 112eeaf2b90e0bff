/**
 * What bounds one logical request to the CMDB, passed explicitly from the poll (or the backfill)
 * down to the transport: the signal that aborts it and the time its caller gives up. A wait the
 * CMDB asks for (Retry-After, a refusal's pause) that would end after the deadline is not waited:
 * the request gives up at once instead of sleeping into the abort.
 */

/** When the caller gives up, in ms since the epoch (real clock); a function when it moves (a scan that keeps making progress). */
export type Deadline = number | (() => number);

export interface RequestContext {
  /** Aborts the request: the poll's deadline, a shutdown, a removal. */
  readonly signal?: AbortSignal;
  /** Absent: the caller sets no deadline (the shared token fetch, --once, a backfill). */
  readonly deadline?: Deadline;
  /**
   * Waited before every further attempt (a retry, a second form of the request) when the caller paces
   * its requests itself (queriesPerMinute), so that the pace holds for every request that leaves.
   * Rejects with CmdbAbortedError when the request's signal aborts.
   */
  readonly beforeRetry?: () => Promise<void>;
}

/** The deadline of `ctx` now (ms since the epoch), or undefined when it has none. */
export function deadlineOf(ctx: RequestContext | undefined): number | undefined {
  const at = ctx?.deadline;
  return typeof at === 'function' ? at() : at;
}
