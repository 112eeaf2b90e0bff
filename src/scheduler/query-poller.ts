/**
 * The saved inventory queries of one stack, counted once per rebuild (query-schedule.ts says when;
 * docs/queries.md how they are paced). The due queries are checked against their table's field
 * metadata of the same rebuild (query-fields.ts) and counted, one request each, paced at
 * queriesPerMinute; each query's last run is its snapshot (QueryOutcome): a count with its
 * rebuild, or a refusal or failure without one, which costs only that query. When the metadata
 * cannot be read the due queries fail without a request: data_metadata reads down, not data_query.
 */
import type { EndpointInputs, QueryCounting } from '../api/endpoints.js';
import type { Rebuilds } from '../api/connector-runs.js';
import { prepareQuery } from '../api/query-check.js';
import type { QueryOutcome, QueryTable, SavedQuery } from '../api/query.js';
import type { RequestContext } from '../api/request-context.js';
import type { StackConfig } from '../config/types.js';
import { CmdbAbortedError, CmdbError, CmdbHttpError } from '../errors.js';
import type { SecretScrubber } from '../secrets.js';
import { deadlineReached } from './deadline.js';
import type { PollResult } from './endpoint-runner.js';
import type { PollContext, PollerParts } from './mapping.js';
import { PACED_SHARE, Pacer, SLICE_SECONDS, type Sleep } from './pacer.js';
import { QueryFields } from './query-fields.js';
import { QueryLedger, type QueryLedgerState } from './query-ledger.js';
import { whenToRun, type RunEnd, type When } from './query-schedule.js';

/** What the status page shows of one saved query. */
export interface QueryStatus {
  readonly name: string;
  readonly table: QueryTable;
  readonly state: 'pending' | QueryOutcome['state'];
  readonly records?: number;
  readonly rebuiltAt?: number;
  readonly ranAt?: number;
  /** Why it is refused or failing (scrubbed), or what it waits for. */
  readonly reason?: string;
  /** Whether it runs at the next poll, and why (query-schedule.ts When). */
  readonly next: When['reason'];
}

export interface QueryPollerOptions extends Pick<PollerParts, 'stack' | 'runner' | 'logger' | 'now'> {
  /** The stack's query reader (src/cmdb/readers/queries.ts); undefined when the readers have none: every query then fails. */
  readonly reader: QueryCounting | undefined;
  readonly scrubber: SecretScrubber;
  /** Waits between paced counts (queriesPerMinute). */
  readonly sleep: Sleep;
  /** Told each slot of the pacer a count takes (ms). */
  readonly onCountSlot?: (slotAt: number) => void;
  readonly paced: boolean;
  /** The first read of the connector history has not finished (the rebuilds may still come). */
  readonly rebuildPending: () => boolean;
  readonly map: <E extends 'data_query' | 'data_metadata'>(endpoint: E, input: EndpointInputs[E]) => PollResult & { kind: 'samples' };
  /** What an earlier process's ledger kept (--storage.path): the queries' last runs and counts. */
  readonly ledger?: QueryLedgerState;
}

/**
 * The CMDB refusing the query itself (400 on page 0 too, 422) is asked again at the next rebuild:
 * the same query would get the same answer. Anything else (network, timeout, 5xx, 429, 401, a 404
 * of a proxy, an answer cut short or of the wrong shape) at the next poll, on the group's back-off.
 */
function endOf(err: unknown): RunEnd {
  return err instanceof CmdbHttpError && (err.status === 400 || err.status === 422) ? 'final' : 'retry';
}

const COUNT_REQUEST = 'POST /CMDB/v2/data/cmdb';

/** How often one poll reads a table's metadata when rebuilds noted meanwhile made the read out of date. */
const METADATA_READS_PER_POLL = 3;

export class QueryPoller {
  private readonly ledger = new QueryLedger();
  private readonly fields: QueryFields;
  private rebuilds: Rebuilds = {};
  private pacer: Pacer;
  /** A reload changed what the data_query series say (a query went, or its alertRiseRatio changed): published at the next poll. */
  private republish = false;

  constructor(private readonly opts: QueryPollerOptions) {
    this.pacer = this.pacerFor(opts.stack());
    this.fields = new QueryFields({ reader: () => opts.reader, runner: opts.runner, now: opts.now, map: opts.map, message: (err) => this.message(err) });
    if (opts.ledger) this.ledger.restore(opts.ledger, opts.stack().queries);
  }

  /** What a restart keeps (--storage.path): the ledger of the queries configured now. */
  exportState(): QueryLedgerState {
    return this.ledger.exportState(this.opts.stack().queries);
  }

  private pacerFor(stack: StackConfig): Pacer {
    return new Pacer(stack.queriesPerMinute, () => this.opts.now() * 1000, this.opts.sleep, this.opts.onCountSlot);
  }

  /**
   * A reload that keeps the stack's road (src/stacks.ts): the queries it left as they were keep what
   * they counted and a refusal (QueryLedger.reconcile); the others are counted as new at the next
   * poll, which publishes the series as the configuration names them now.
   */
  reconfigure(before: StackConfig, after: StackConfig): void {
    if (before.queriesPerMinute !== after.queriesPerMinute) this.pacer = this.pacerFor(after);
    if (this.ledger.reconcile(before.queries, after.queries)) this.republish = true;
  }

  /** What the connector history says of the rebuilds now; a time never moves back (an older row read later). */
  noteRebuilds(seen: Rebuilds): void {
    const later = (a?: number, b?: number) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));
    const { newest, asset, user } = this.rebuilds;
    const next = { newest: later(newest, seen.newest), asset: later(asset, seen.asset), user: later(user, seen.user) };
    this.rebuilds = Object.fromEntries(Object.entries(next).filter(([, v]) => v !== undefined));
  }

  /** One poll of the `queries` group. Never throws but for an abort (the runner records the rest). */
  async poll(ctx: PollContext, stop?: AbortSignal): Promise<void> {
    const at = this.opts.now();
    const queries = this.opts.stack().queries;
    const due = queries.filter((q) => this.when(q, at).due);
    // A query whose table's metadata is not that of its rebuild cannot be checked, so it is not sent.
    // A connector read running beside this poll may note a later rebuild while the metadata is read
    // (a full scan after an outage notes them page by page): the metadata is then read again for it,
    // a few times at most, rather than leaving the queries unsent until the next connector poll. A
    // read that failed is not repeated here: the group's back-off does that.
    let unchecked: SavedQuery[] = [];
    for (let read = 0; read < METADATA_READS_PER_POLL; read++) {
      const seen = this.rebuilds;
      await this.fields.readDue([...new Set(due.map((q) => q.table))], seen, ctx, this.ledger.size > 0);
      unchecked = due.filter((q) => this.fields.uncheckable(q.table, this.rebuilds[q.table]) !== undefined);
      const outdated = unchecked.length > 0 && this.rebuilds !== seen && unchecked.every((q) => !this.fields.failed(q.table));
      if (!outdated || ctx.signal?.aborted === true) break;
    }
    for (const q of unchecked) this.uncheckable(q, at);
    const ready = due.filter((q) => !unchecked.includes(q));
    if (ready.length > 0) await this.countAll(ready, at, ctx, stop);
    else if (unchecked.length > 0) await this.publishUnsent(ctx);
    // Nothing was due: what the store holds is still current (an endpoint that never ran stays pending), but for a reload's changes.
    else if (this.ledger.size > 0) await this.opts.runner.run('data_query', async () => (this.republish ? this.published() : { kind: 'unchanged' }), ctx.signal);
  }

  /**
   * Every due query waits on the metadata, and none was sent: their series say so (no count,
   * last_run_success 0), while the endpoint reads as its last count left it. data_metadata reads
   * down and names the cause: an alert on data_query must not fire for a metadata outage.
   * Publishing sends nothing, so the poll's deadline does not bind it: a metadata read cut off there
   * (Retry-After pauses, retries) fails data_metadata alone; a shutdown still stops it.
   */
  private async publishUnsent(ctx: PollContext): Promise<void> {
    const { runner } = this.opts;
    if (runner.status().find((s) => s.endpoint === 'data_query')?.state === 'failing') return;
    await runner.run('data_query', async () => this.published(), deadlineReached(ctx.signal) ? undefined : ctx.signal);
  }

  /** The data_query series of every query's last run, as the configuration names them now. */
  private published(): PollResult & { kind: 'samples' } {
    this.republish = false;
    return this.opts.map('data_query', this.ledger.all(this.opts.stack().queries));
  }

  /** Not sent: the table's field metadata of this rebuild was not read. Asked again at the next poll, on the group's back-off. */
  private uncheckable(q: SavedQuery, roundAt: number): void {
    const why = this.fields.uncheckable(q.table, this.rebuilds[q.table]) ?? 'not read yet';
    const ranAt = this.opts.now();
    this.ledger.record(q, { at: roundAt, end: 'retry' }, { state: 'failed', ranAt }, why);
  }

  status(): QueryStatus[] {
    const at = this.opts.now();
    return this.opts.stack().queries.map((q) => {
      const o = this.ledger.outcome(q.name);
      const when = this.when(q, at);
      const reason = this.ledger.reason(q.name) ?? (when.reason === 'waiting' ? 'waiting for the first read of the connector history (its merger rows date the rebuilds)' : undefined);
      return { name: q.name, table: q.table, state: o?.state ?? 'pending', ...o, ...(reason === undefined ? {} : { reason }), next: when.reason };
    });
  }

  private when(q: SavedQuery, now: number): When {
    const { stack, rebuildPending } = this.opts;
    return whenToRun({ now, rebuild: this.rebuilds[q.table], rebuildPending: rebuildPending(), last: this.ledger.lastRun(q.name), minSeconds: stack().intervals.queries });
  }

  /**
   * Counts `due` in slices, each published when it ends (or at a failed count); paced rounds stop by their share of the
   * interval (the rest stays due). Every query of the round is spaced from `roundAt`, the round's
   * start: paced seconds apart, they stay due together, so the next round reads each table's
   * metadata once.
   */
  private async countAll(due: readonly SavedQuery[], roundAt: number, ctx: PollContext, stop?: AbortSignal): Promise<void> {
    const { paced, now, stack, runner } = this.opts;
    const { signal } = ctx;
    const deadline = paced ? now() + stack().intervals.queries * PACED_SHARE : Infinity;
    let next = 0;
    // A failure in one slice keeps the later slices of the round partial: the endpoint stays down until a round counts every query.
    let error: unknown;
    while (next < due.length && !signal.aborted && !stop?.aborted && now() < deadline) {
      const sliceEnd = Math.min(deadline, now() + SLICE_SECONDS);
      const started = next;
      await runner.run(
        'data_query',
        async () => {
          while (next < due.length) {
            if (paced && !(await this.pacer.take(sliceEnd * 1000, signal, stop, COUNT_REQUEST))) break;
            const failed = await this.runOne(due[next++] as SavedQuery, roundAt, paced ? this.pacedContext(ctx, stop) : ctx);
            // Published at once: the endpoint reads down as soon as a count failed, not at the slice's end.
            if (failed !== undefined) {
              error = failed;
              break;
            }
          }
          const result = this.published();
          return error === undefined ? result : { kind: 'partial', samples: result.samples, error };
        },
        signal,
      );
      // A slice that could not start a single count before the deadline ends the round.
      if (next === started && sliceEnd >= deadline) break;
    }
  }

  /**
   * The poll's context with the pacer before every further request of a count (a retry after a 5xx
   * or a timeout, page 0 after a refused page past the end): each request that leaves took a slot.
   */
  private pacedContext(ctx: PollContext, stop: AbortSignal | undefined): RequestContext {
    const beforeRetry = async () => {
      if (!(await this.pacer.take(Infinity, ctx.signal, stop, COUNT_REQUEST))) throw new CmdbAbortedError(`pacing of ${COUNT_REQUEST}`);
    };
    return { ...ctx, beforeRetry };
  }

  /** Checks and counts one query; returns the request's error when it failed (a refusal is not an error of the endpoint). */
  private async runOne(q: SavedQuery, roundAt: number, ctx: RequestContext): Promise<unknown> {
    const { now, reader, stack } = this.opts;
    const ranAt = now();
    const rebuild = this.rebuilds[q.table];
    const types = this.fields.types(q.table);
    if (types === undefined || reader === undefined) return undefined;
    // A rebuild noted while the round ran (a connector poll between two paced counts): not checked against the metadata before it.
    if (this.fields.uncheckable(q.table, rebuild) !== undefined) {
      this.uncheckable(q, roundAt);
      return undefined;
    }
    const last = { at: roundAt, ...(rebuild === undefined ? {} : { rebuild }) };
    const prepared = prepareQuery(q, types, ranAt, stack().timezone);
    if (!prepared.ok) {
      // Checked again at the next rebuild (the metadata is read again with it) or a reload that changes it.
      this.ledger.record(q, { ...last, end: 'refused' }, { state: 'refused', ranAt }, prepared.reason);
      this.logRefusal(q.name, prepared.reason);
      return undefined;
    }
    try {
      const records = await reader.count(q.table, prepared.query, ctx);
      const previous = this.ledger.counts(q.name, records, rebuild);
      const extra = { ...(rebuild === undefined ? {} : { rebuiltAt: rebuild }), ...(previous === undefined ? {} : { previousRecords: previous }) };
      this.ledger.record(q, { ...last, end: 'ok' }, { state: 'ok', records, ranAt, ...extra });
      return undefined;
    } catch (err) {
      if (err instanceof CmdbAbortedError) throw err;
      this.ledger.record(q, { ...last, end: endOf(err) }, { state: 'failed', ranAt }, this.message(err));
      return err;
    }
  }

  /** A refusal is the configuration's to fix: logged once, with what to do, until its reason changes. */
  private logRefusal(name: string, reason: string): void {
    if (!this.ledger.firstRefusal(name, reason)) return;
    this.opts.logger.warn(
      { endpoint: 'data_query', query: name, hint: 'fix the query under queries in the configuration and reload; the other queries go on' },
      `saved query refused, not sent: ${reason}`,
    );
  }

  private message(err: unknown): string {
    return this.opts.scrubber.scrub(err instanceof CmdbError || err instanceof Error ? err.message : String(err));
  }
}
