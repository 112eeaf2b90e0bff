/**
 * The poll plan of one stack: how many requests an hour its configuration asks of the CMDB, given
 * what its client last saw (PollPlan observes its road's events), retries aside, against the budget
 * of rateLimitPerMinute × 60. The formula is in docs/scaling.md ("Sizing the request budget").
 */
import type { DataEndpoint } from '../api/endpoints.js';
import type { StackConfig } from '../config/types.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Logger } from '../logger.js';
import type { ReadEvent, RequestEvent, RoadEvents } from './events.js';

/** What the stack's client saw of the CMDB; undefined where it has not seen it yet. */
export interface PlanSeen {
  /** Pages of the last incremental and the last full read of the connector history. */
  readonly connectorPages?: { readonly incremental?: number; readonly full?: number };
  /** Pages of the last read of the Action list, and the Actions in it. */
  readonly actionPages?: number;
  readonly actions?: number;
  /** Action job fetches and ingestion detail fetches an hour, as the client made them lately. */
  readonly actionJobsPerHour?: number;
  readonly ingestionDetailPerHour?: number;
}

export interface StackPlan {
  readonly stack: string;
  /** Planned requests an hour by endpoint (the token request is left out: one on start and after a 401). */
  readonly perHour: Readonly<Partial<Record<DataEndpoint, number>>>;
  readonly total: number;
  /** rateLimitPerMinute × 60. */
  readonly budgetPerHour: number;
  /** total ÷ budgetPerHour: above 1 the polls cannot all run at their intervals. */
  readonly ratio: number;
}

/** Requests an hour of `stack` for the endpoints in `enabled`: the formula of docs/scaling.md, with what was seen. */
export function planFor(stack: StackConfig, enabled: ReadonlySet<DataEndpoint>, seen: PlanSeen = {}): StackPlan {
  const i = stack.intervals;
  const per = (seconds: number) => 3600 / seconds;
  const perHour: Partial<Record<DataEndpoint, number>> = {};
  const set = (endpoint: DataEndpoint, n: number) => {
    if (enabled.has(endpoint)) perHour[endpoint] = n;
  };
  set('metrics_data', per(i.inventory));
  set('license', per(i.license));
  const inc = Math.max(1, seen.connectorPages?.incremental ?? seen.connectorPages?.full ?? 1);
  const full = Math.max(inc, seen.connectorPages?.full ?? inc);
  // Full scans replace an incremental poll now and then; each costs its extra pages.
  set('connector', per(i.connectors) * inc + (full - inc) * per(stack.connectorFullScanInterval));
  set('data_ingestion', per(i.ingestion));
  set('data_ingestion_next', per(i.ingestion));
  set('data_ingestion_detail', seen.ingestionDetailPerHour ?? per(i.ingestion));
  set('actions', per(i.actions) * Math.max(1, seen.actionPages ?? 1));
  const refresh = (seen.actions ?? 0) * per(i.actionJobsRefresh);
  set('action_jobs', Math.min(stack.actionJobsPerMinute * 60, seen.actionJobsPerHour ?? refresh));
  set('asset_change', per(i.changes) * stack.track.assets.length);
  set('user_change', per(i.changes) * stack.track.users.length);
  // Saved queries run once per rebuild, at most every intervals.queries: planned at that bound.
  set('data_metadata', per(i.queries) * new Set(stack.queries.map((q) => q.table)).size);
  set('data_query', per(i.queries) * stack.queries.length);
  const total = Object.values(perHour).reduce((a, b) => a + b, 0);
  const budgetPerHour = stack.rateLimitPerMinute * 60;
  return { stack: stack.name, perHour, total, budgetPerHour, ratio: budgetPerHour > 0 ? total / budgetPerHour : Number.POSITIVE_INFINITY };
}

/** What to change when the plan does not fit, largest share first. */
export function planAdvice(plan: StackPlan, stack: StackConfig): string {
  const top = Object.entries(plan.perHour)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 2)
    .map(([e, n]) => `${e} ${Math.round(n)}/h`);
  return (
    `the largest shares are ${top.join(', ')}: lengthen those intervals, track fewer names (track.assets, track.users), ` +
    `raise paging page sizes, or raise rateLimitPerMinute (${stack.rateLimitPerMinute}) if the CMDB allows it`
  );
}

/** Counts of one kind of request over the last hour, for a rate an hour. */
export class HourlyRate {
  private times: number[] = [];
  private first: number | undefined;

  record(nowMs: number): void {
    this.first ??= nowMs;
    this.times.push(nowMs);
    this.trim(nowMs);
  }

  /**
   * Requests an hour: those of the last hour, or, before a full hour of history, those since the
   * first scaled to an hour (at least `minSpanMs` of span, so one burst is not an hour's rate).
   */
  perHour(nowMs: number, minSpanMs: number): number | undefined {
    if (this.first === undefined) return undefined;
    this.trim(nowMs);
    const span = Math.min(3_600_000, Math.max(minSpanMs, nowMs - this.first));
    return (this.times.length * 3_600_000) / span;
  }

  private trim(nowMs: number): void {
    let drop = 0;
    while (drop < this.times.length && (this.times[drop] as number) <= nowMs - 3_600_000) drop++;
    if (drop > 0) this.times.splice(0, drop);
  }
}

export interface PollPlanOptions {
  readonly stack: StackConfig;
  /** The endpoints the stack polls. */
  readonly enabled: readonly DataEndpoint[];
  /** What the stack's previous runtime saw, so that a reload plans with it. */
  readonly seen?: PlanSeen;
  readonly events: RoadEvents;
  readonly instruments: Instruments;
  /** Already a child bound to { stack }. */
  readonly logger: Logger;
  /** ms since the epoch. */
  readonly now: () => number;
}

/**
 * The poll plan of one stack as its road goes: the reads and requests it observes feed what was
 * seen; cmdb_exporter_request_demand_ratio follows, and a warning when the plan goes above the budget.
 */
export class PollPlan {
  private stack: StackConfig;
  private enabled: ReadonlySet<DataEndpoint>;
  private seenSoFar: { -readonly [K in keyof PlanSeen]: PlanSeen[K] };
  private readonly jobFetches = new HourlyRate();
  private readonly detailFetches = new HourlyRate();
  /** The plan was above the budget when last published: say so again only when that changes. */
  private overBudget = false;
  private readonly off: Array<() => void>;

  constructor(private readonly opts: PollPlanOptions) {
    this.stack = opts.stack;
    this.enabled = new Set(opts.enabled);
    this.seenSoFar = { ...opts.seen };
    this.off = [opts.events.requests.on((e) => this.request(e)), opts.events.reads.on((e) => this.read(e))];
    // At start and on reload: what the configuration asks of the budget (with what was seen), said once here when it does not fit.
    this.publish();
  }

  /** A reload changed the stack's settings in place: the plan, and the windows it measures fetch rates over, follow. */
  reconfigure(stack: StackConfig, enabled: readonly DataEndpoint[]): void {
    this.stack = stack;
    this.enabled = new Set(enabled);
    this.publish();
  }

  /** The stack's poll plan now: requests an hour against its budget. */
  plan(): StackPlan {
    return planFor(this.stack, this.enabled, this.seen());
  }

  /** What was seen, for the stack's next runtime (a reload plans with it). */
  seen(): PlanSeen {
    const now = this.opts.now();
    const i = this.stack.intervals;
    return {
      ...this.seenSoFar,
      actionJobsPerHour: this.jobFetches.perHour(now, i.actionJobsRefresh * 1000) ?? this.seenSoFar.actionJobsPerHour,
      ingestionDetailPerHour: this.detailFetches.perHour(now, i.ingestion * 10_000) ?? this.seenSoFar.ingestionDetailPerHour,
    };
  }

  /** Stops observing (the runtime ends). */
  close(): void {
    for (const off of this.off) off();
  }

  private request(e: RequestEvent): void {
    // A fetch is its first attempt: retries and redirect hops are not more fetches.
    if (e.attempt !== 1 || e.redirected) return;
    if (e.endpoint === 'action_jobs') this.jobFetches.record(e.sentAt);
    if (e.endpoint === 'data_ingestion_detail') this.detailFetches.record(e.sentAt);
  }

  private read(e: ReadEvent): void {
    if (e.endpoint === 'connector' && e.kind) this.seenSoFar.connectorPages = { ...this.seenSoFar.connectorPages, [e.kind]: e.pages };
    if (e.endpoint === 'actions') {
      this.seenSoFar.actionPages = e.pages;
      this.seenSoFar.actions = e.rows;
    }
    this.publish();
  }

  private publish(): void {
    if (this.enabled.size === 0) return;
    const { instruments, logger } = this.opts;
    const plan = this.plan();
    instruments.requestDemand.set({ stack: this.stack.name }, Math.round(plan.ratio * 1000) / 1000);
    const over = plan.ratio > 1;
    if (over && !this.overBudget) {
      logger.warn(
        { demandPerHour: Math.round(plan.total), budgetPerHour: plan.budgetPerHour, ratio: Math.round(plan.ratio * 100) / 100 },
        `the poll plan of this stack asks ${Math.round(plan.total)} requests an hour of a budget of ${plan.budgetPerHour} (rateLimitPerMinute × 60): polls will wait for the budget and fall behind their intervals; ${planAdvice(plan, this.stack)}`,
      );
    }
    this.overBudget = over;
  }
}
