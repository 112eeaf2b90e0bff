/**
 * When a saved query runs: a pure decision, so that "once per rebuild" is a table of cases.
 *
 * - At start, once the stack's "data as of" is known: the first read of the connector history
 *   (whose merger rows date the rebuilds) has finished, or the stack does not read it.
 * - When its table's data was rebuilt since its last run (a newer merger run that did not fail),
 *   but not sooner than `minSeconds` (intervals.queries) after its last run: a rebuild seen sooner
 *   waits for the spacing to pass.
 * - At least once a day, rebuild or not (a stack whose mergers stopped, or no merger rows at all).
 * - After a failed request at the next poll: the scheduler's back-off for failing groups spaces
 *   those. After the CMDB refused the query itself (400, 422) or the field metadata check did, not
 *   before the next rebuild or day: asking again would get the same answer.
 *
 * Between rebuilds nothing is due, so nothing is sent.
 */

/** At least this often a query runs, rebuild or not (seconds). */
export const MAX_QUERY_AGE_SECONDS = 86_400;

/** How a query's last run ended, for the decision. */
export type RunEnd = 'ok' | 'refused' | 'retry' | 'final';

export interface LastRun {
  /** When it ran (unix seconds). */
  readonly at: number;
  /** The rebuild it ran against (unix seconds); undefined when none was known. */
  readonly rebuild?: number;
  readonly end: RunEnd;
}

export interface WhenInput {
  readonly now: number;
  /** The table's newest rebuild now; undefined when none is known. */
  readonly rebuild: number | undefined;
  /** The first read of the connector history has not finished: the rebuild may still come. */
  readonly rebuildPending: boolean;
  readonly last: LastRun | undefined;
  /** intervals.queries. */
  readonly minSeconds: number;
}

export type When =
  | { readonly due: true; readonly reason: 'start' | 'rebuild' | 'daily' | 'retry' }
  | { readonly due: false; readonly reason: 'waiting' | 'spacing' | 'current' };

export function whenToRun({ now, rebuild, rebuildPending, last, minSeconds }: WhenInput): When {
  if (last === undefined) return rebuildPending ? { due: false, reason: 'waiting' } : { due: true, reason: 'start' };
  if (last.end === 'retry') return { due: true, reason: 'retry' };
  const since = now - last.at;
  if (since >= MAX_QUERY_AGE_SECONDS) return { due: true, reason: 'daily' };
  const rebuilt = rebuild !== undefined && (last.rebuild === undefined || rebuild > last.rebuild);
  if (!rebuilt) return { due: false, reason: 'current' };
  return since >= minSeconds ? { due: true, reason: 'rebuild' } : { due: false, reason: 'spacing' };
}

/** Field metadata is read again with the rebuilds: when its table was rebuilt since, or it is a day old. */
export function metadataDue(read: { readonly at: number; readonly rebuild?: number } | undefined, rebuild: number | undefined, now: number): boolean {
  if (read === undefined) return true;
  if (now - read.at >= MAX_QUERY_AGE_SECONDS) return true;
  return rebuild !== undefined && (read.rebuild === undefined || rebuild > read.rebuild);
}
