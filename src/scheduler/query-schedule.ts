/**
 * When a saved query runs: a pure decision, so that "once per rebuild" is a table of cases (at start
 * once the data's "as of" is known; when its table was rebuilt, at most every `minSeconds`; at least
 * daily; after a failed request at the next poll, after a refusal at the next rebuild or day). The
 * rules and why: docs/queries.md, "Once per rebuild". Between rebuilds nothing is due.
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
