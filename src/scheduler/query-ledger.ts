/**
 * What each saved query's runs left (query-poller.ts keeps one per stack): the outcome its series
 * are made of, the last run the schedule decides from, the reason of a refusal or failure, and the
 * count of the rebuild before (kept across failed runs, for the change across rebuilds).
 *
 * A restart keeps it (--storage.path) in a small versioned form of its own (exportState, restore):
 * per query its last run, its outcome and what it counted, under a hash of its table and query (a
 * query changed meanwhile is counted as new). Never a reason's text (it may quote an error), so
 * after a restart with no rebuild since, no query and no field metadata is asked again, and
 * cmdb_query_previous_records goes on.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { QueryOutcome, SavedQuery } from '../api/query.js';
import type { LastRun } from './query-schedule.js';

export const QUERY_LEDGER_VERSION = 1;

const time = z.number().finite();
const count = z.number().int().min(0);
const QueryLedgerStateSchema = z.object({
  v: z.literal(QUERY_LEDGER_VERSION),
  queries: z.array(
    z.object({
      name: z.string(),
      /** sha256 of the query's table and query: the count is this query's only while they stay. */
      def: z.string().regex(/^[0-9a-f]{64}$/),
      run: z.object({ at: time, rebuild: time.optional(), end: z.enum(['ok', 'refused', 'retry', 'final']) }),
      outcome: z.object({ state: z.enum(['ok', 'refused', 'failed']), records: count.optional(), rebuiltAt: time.optional(), ranAt: time.optional(), previousRecords: count.optional() }),
      counted: z.object({ records: count, rebuiltAt: time.optional(), previous: count.optional() }).optional(),
    }),
  ),
});

export type QueryLedgerState = z.output<typeof QueryLedgerStateSchema>;

/** `state` validated as the ledger's state of this version, or undefined. */
export function queryLedgerStateFrom(state: unknown): QueryLedgerState | undefined {
  const parsed = QueryLedgerStateSchema.safeParse(state);
  return parsed.success ? parsed.data : undefined;
}

/** What a restored refusal or failure says until the query runs again (its reason's text is not kept). */
export const RESTORED_REASON = 'as before the restart (the reason is in the log of that run)';

interface Counted {
  readonly records: number;
  readonly rebuiltAt?: number;
  readonly previous?: number;
}

/** A query's definition as far as its count goes: a change of it makes an earlier count another query's. */
const countedAs = (q: SavedQuery) => JSON.stringify([q.table, q.query]);
const definitionOf = (q: SavedQuery) => createHash('sha256').update(countedAs(q)).digest('hex');

export class QueryLedger {
  private readonly outcomes = new Map<string, QueryOutcome>();
  private readonly runs = new Map<string, LastRun>();
  private readonly reasons = new Map<string, string>();
  private readonly counted = new Map<string, Counted>();
  /** The refusal logged per query: logged once, not at every rebuild. */
  private readonly logged = new Map<string, string>();

  get size(): number {
    return this.outcomes.size;
  }

  lastRun(name: string): LastRun | undefined {
    return this.runs.get(name);
  }

  outcome(name: string): QueryOutcome | undefined {
    return this.outcomes.get(name);
  }

  reason(name: string): string | undefined {
    return this.reasons.get(name);
  }

  /**
   * The outcome of each of `queries` that ran, with its alertRiseRatio as configured now: the input
   * of the data_query collector.
   */
  all(queries: readonly SavedQuery[]): Array<{ id: string; value: QueryOutcome }> {
    return queries.flatMap((q) => {
      const value = this.outcomes.get(q.name);
      if (value === undefined) return [];
      return [{ id: q.name, value: q.alertRiseRatio === undefined ? value : { ...value, alertRiseRatio: q.alertRiseRatio } }];
    });
  }

  record(q: SavedQuery, run: LastRun, outcome: QueryOutcome, reason?: string): void {
    this.runs.set(q.name, run);
    this.outcomes.set(q.name, outcome);
    if (reason === undefined) this.reasons.delete(q.name);
    else this.reasons.set(q.name, reason);
    if (outcome.state !== 'refused') this.logged.delete(q.name);
  }

  /**
   * Keeps a count and returns the count of the rebuild before: a count of another rebuild moves the
   * last one to "before"; a count of the same rebuild (the daily run) keeps what was before.
   */
  counts(name: string, records: number, rebuiltAt: number | undefined): number | undefined {
    const held = this.counted.get(name);
    const previous = held === undefined ? undefined : held.rebuiltAt === rebuiltAt && rebuiltAt !== undefined ? held.previous : held.records;
    this.counted.set(name, { records, ...(rebuiltAt === undefined ? {} : { rebuiltAt }), ...(previous === undefined ? {} : { previous }) });
    return previous;
  }

  /**
   * A reload changed the saved queries from `before` to `after`: every query whose table and query
   * stay keeps its count, its rebuild, the count before and a refusal (not logged again); a query
   * that changed or went is forgotten (a changed one runs as new). True when the data_query series
   * change with it (a query went or changed, or its alertRiseRatio did).
   */
  reconcile(before: readonly SavedQuery[], after: readonly SavedQuery[]): boolean {
    const now = new Map(after.map((q) => [q.name, q]));
    let changed = false;
    for (const q of before) {
      const next = now.get(q.name);
      if (next !== undefined && countedAs(next) === countedAs(q)) {
        changed ||= next.alertRiseRatio !== q.alertRiseRatio;
        continue;
      }
      for (const held of [this.outcomes, this.runs, this.reasons, this.counted, this.logged]) held.delete(q.name);
      changed = true;
    }
    return changed;
  }

  /** True the first time a query is refused for `reason` (to log it once). */
  firstRefusal(name: string, reason: string): boolean {
    if (this.logged.get(name) === reason) return false;
    this.logged.set(name, reason);
    return true;
  }

  /** What a restart keeps of `queries` (those that ran). */
  exportState(queries: readonly SavedQuery[]): QueryLedgerState {
    const out: QueryLedgerState['queries'] = [];
    for (const q of queries) {
      const run = this.runs.get(q.name);
      const outcome = this.outcomes.get(q.name);
      if (!run || !outcome) continue;
      const { alertRiseRatio: _configured, ...kept } = outcome;
      const counted = this.counted.get(q.name);
      out.push({ name: q.name, def: definitionOf(q), run, outcome: kept, ...(counted ? { counted } : {}) });
    }
    return { v: QUERY_LEDGER_VERSION, queries: out };
  }

  /** Takes over what an earlier process kept (queryLedgerStateFrom) of the queries configured now whose table and query are the same. */
  restore(state: QueryLedgerState, queries: readonly SavedQuery[]): void {
    const configured = new Map(queries.map((q) => [q.name, q]));
    for (const e of state.queries) {
      const q = configured.get(e.name);
      if (!q || definitionOf(q) !== e.def) continue;
      this.runs.set(q.name, e.run);
      this.outcomes.set(q.name, e.outcome);
      if (e.outcome.state !== 'ok') this.reasons.set(q.name, RESTORED_REASON);
      if (e.counted) this.counted.set(q.name, e.counted);
    }
  }
}
