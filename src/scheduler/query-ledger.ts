/**
 * What each saved query's runs left (query-poller.ts keeps one per stack): the outcome its series
 * are made of, the last run the schedule decides from, the reason of a refusal or failure, and the
 * count of the rebuild before (kept across failed runs, for the change across rebuilds).
 */
import type { QueryOutcome, SavedQuery } from '../api/query.js';
import type { LastRun } from './query-schedule.js';

interface Counted {
  readonly records: number;
  readonly rebuiltAt?: number;
  readonly previous?: number;
}

/** A query's definition as far as its count goes: a change of it makes an earlier count another query's. */
const countedAs = (q: SavedQuery) => JSON.stringify([q.table, q.query]);

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
}
