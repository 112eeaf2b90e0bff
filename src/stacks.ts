/**
 * The runtime of every polled stack: its client, poller, store slot, instruments and scheduler
 * jobs, added, removed and re-applied on reload as one unit; and what the server asks of them
 * (readiness, the status page's model, a poll of everything for --once).
 */
import { DATA_ENDPOINTS, groupOf, type DataEndpoint, type GroupName } from './api/endpoints.js';
import { tokenSlot } from './cmdb/auth.js';
import { POLL_TOKEN_RENEWALS, sameCredentials, type CmdbClient } from './cmdb/client.js';
import type { RoadEvents } from './cmdb/events.js';
import type { PollPlan } from './cmdb/plan.js';
import type { StackReaders } from './cmdb/readers/index.js';
import { openRoad, type Road } from './cmdb/road.js';
import { pollSettings } from './config/endpoints.js';
import type { ExporterConfig, StackConfig } from './config/types.js';
import type { StartTimes } from './exposition/start-times.js';
import type { Logger } from './logger.js';
import type { Storage } from './persist/storage.js';
import { initStackInstruments, removeStackInstruments, type Instruments } from './metrics/instruments.js';
import { nextScheduledRun, nodeCron, pollAllOnce, Scheduler, type SchedulerOptions } from './scheduler/scheduler.js';
import { StackPoller } from './scheduler/stack-poller.js';
import type { SecretScrubber } from './secrets.js';
import type { Readiness } from './server/http.js';
import type { LandingStack } from './server/landing.js';
import type { SnapshotStore } from './store/snapshot-store.js';
import { stackParts, startingPoint, type Carried, type Restored } from './stack-state.js';
import { StatusMemory } from './status-memory.js';

export interface StacksOptions {
  readonly instruments: Instruments;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readonly scrubber: SecretScrubber;
  /**
   * How the stacks' polls are scheduled (one job per stack and group, src/scheduler/scheduler.ts);
   * without it nothing is scheduled (--once polls by hand). `cron`: default node-cron.
   */
  readonly schedule?: Partial<Pick<SchedulerOptions, 'cron' | 'initialJitterMs'>>;
  /** Unix seconds. */
  readonly now: () => number;
  /** The same clock in ms (default Date.now): the scheduler's, and the budget's restored sends. */
  readonly nowMs?: () => number;
  /**
   * --storage.path: each stack starts from what an earlier process kept (asked once, when it starts
   * with the process), and every request a stack's budget lets leave is recorded.
   */
  readonly storage?: Storage;
  /** The starts of the exporter's own series (`_created`): a stack a reload removes loses its starts with its counters. */
  readonly starts?: StartTimes;
  /** Told each stack's road events as the stack is built (tests and benchmarks watch what its budget granted). */
  readonly onRoad?: (stack: string, events: RoadEvents) => void;
}

/** What a reload did to the stacks. */
export interface ApplySummary {
  unchanged: number;
  /** Its road stayed (same service, credentials, paging): the running stack took its new settings in place. */
  reconfigured: number;
  restarted: number;
  added: number;
  removed: number;
}

interface StackRuntime {
  readonly config: StackConfig;
  /** Unix seconds when this runtime started: it holds readiness back one attempt timeout at most. */
  readonly startedAt: number;
  /**
   * Added after start (by a reload, a new file in stacksDir): readiness is about the stacks the
   * process started with, so its first polls never make it unready; it is shown as joining.
   */
  readonly joined: boolean;
  /** Started from the state an earlier process kept (--storage.path): it served before, so it is ready at once. */
  readonly restored: boolean;
  readonly road: Road;
  readonly client: CmdbClient;
  readonly readers: StackReaders;
  readonly plan: PollPlan;
  readonly poller: StackPoller;
}

/**
 * What a stack's road is: the service it asks, as whom, and how its pages are cut and ordered (with
 * the time zone its held times were read in). docs/design.md, "A reload keeps what the stack knows".
 */
const ROAD_KEYS = ['baseUrl', 'auth', 'paging', 'connectorSort', 'timezone'] as const satisfies ReadonlyArray<keyof StackConfig>;

/** The same road: a reload keeps the running stack and gives it its new settings in place. */
export function sameRoad(a: StackConfig, b: StackConfig): boolean {
  return ROAD_KEYS.every((key) => JSON.stringify(a[key]) === JSON.stringify(b[key]));
}

/** The group's next poll: its retry after a failure, or its scheduled poll, whichever comes first. */
function nextPoll(scheduler: Scheduler, stack: string, group: GroupName, interval: number, now: number): number {
  const scheduled = nextScheduledRun(stack, group, interval, now);
  const retry = scheduler.retryAt(stack, group);
  return retry === undefined ? scheduled : Math.min(retry, scheduled);
}

export class Stacks {
  private readonly runtimes = new Map<string, StackRuntime>();
  /** What the status page remembers of each stack: its recent requests, since when it has each problem. */
  private readonly status: StatusMemory;

  /** Runs every stack's poll jobs; undefined without `schedule`. */
  private readonly scheduler: Scheduler | undefined;
  /** The scheduler takes the stacks' jobs (startPolling): before, a stack added waits for it. */
  private polling = false;

  constructor(private readonly opts: StacksOptions) {
    const { schedule, instruments, logger, nowMs } = opts;
    this.scheduler = schedule && new Scheduler({ ...schedule, instruments, logger, cron: schedule.cron ?? nodeCron(logger), nowMs });
    this.status = new StatusMemory(opts.store, (name) => void this.landing(name), opts.now);
  }

  /** How many stacks this process polls (cmdb_exporter_stacks). */
  get count(): number {
    return this.runtimes.size;
  }

  /**
   * Builds the stack's runtime in one place, from what it starts from, resolved once here: `from`,
   * what its previous runtime knew (a reload, Carried); absent, the stack starts with the process,
   * from what an earlier one kept (--storage.path, src/stack-state.ts) if anything. Each part is
   * handed its own piece as it is made. Resolves once the restored series are applied (served whole
   * from the next scrape). `joined`: see StackRuntime.
   */
  add(stack: StackConfig, from?: Restored, joined = false): Promise<void> {
    const { instruments, store, scrubber, now, storage, nowMs = Date.now } = this.opts;
    const start = from ?? (storage && startingPoint(storage, stack, this.opts.logger, nowMs())) ?? { carried: {} };
    const { carried } = start;
    const { scheduler } = this;
    const logger = this.opts.logger.child({ stack: stack.name });
    // What the stack polls, computed once here and handed as data to its instruments, road, poller and store slot.
    const settings = pollSettings(stack);
    initStackInstruments(instruments, stack.name, settings.groups, settings.enabled);
    // --storage.path: each token granted is kept there for a backfill with the same client id (src/persist/token-file.ts).
    const onToken = storage ? (token: string) => storage.keepToken(stack, token) : undefined;
    const road = openRoad({ stack, instruments, logger, scrubber, tokenRenewalsPerRequest: POLL_TOKEN_RENEWALS, budget: carried.budget, carried: carried.client, history: carried.history, historyState: carried.historyState, enabled: settings.enabled, seen: carried.seen, ...(onToken ? { onToken } : {}) });
    const { client, readers } = road;
    const plan = road.plan as PollPlan;
    // --storage.path: every request is recorded as it leaves, so that a restart counts it (journal.ts).
    if (storage) client.events.sends.on((e) => storage.recordSend(stack.name, e.sentAt));
    const onBacklog = (n: number) => instruments.actionJobsBacklog.set({ stack: stack.name }, n);
    // Without a scheduler (--once) one round fetches every Action's jobs: no pacing, no backlog left.
    const poller = new StackPoller({ stack, settings, api: readers, store, logger, scrubber, now, onBacklog, paced: scheduler !== undefined, forbidden: carried.forbidden, restored: carried.restored, onCountSlot: (slotAt) => client.events.paced.emit({ slotAt }) });
    this.opts.onRoad?.(stack.name, client.events);
    // Restored Actions whose jobs are due (--storage.path): the backlog shows from the first scrape.
    if (carried.restored?.poller) onBacklog(poller.jobBacklog());
    store.addStack(stack.name, settings.timing, stack.maxSeries);
    // Applied in slices, as a poll's series are.
    const applied = start.series ? store.restoreStack(stack.name, start.series) : Promise.resolve();
    // What became of the stack's requests, for the status page's "CMDB unreachable" cause line; and
    // since when an earlier process saw each problem, held until the restored series are applied.
    client.events.requests.on(this.status.recorder(stack.name));
    if (start.problemsSeen) this.status.restore(stack.name, start.problemsSeen, applied);
    this.runtimes.set(stack.name, { config: stack, road, client, readers, plan, poller, startedAt: now(), joined, restored: carried.restored !== undefined });
    if (this.polling) scheduler?.add(poller);
    return applied;
  }

  /**
   * The stacks start polling (the scheduler takes their jobs, and those of every stack added
   * later): once the process serves, so that a start that fails sent no request to the CMDB.
   */
  startPolling(): void {
    if (this.polling) return;
    this.polling = true;
    const at = this.opts.now();
    for (const [name, r] of this.runtimes) {
      // Readiness waits one attempt timeout from the first polls, not from when the runtime was built.
      this.runtimes.set(name, { ...r, startedAt: at });
      this.scheduler?.add(r.poller);
    }
  }

  /**
   * Stops a stack. `forget`: it is gone from the configuration, so its series, counters and
   * histograms go too. Otherwise it is restarting with a changed configuration: it keeps its
   * counters (they stay monotonic) and its snapshot, which the new runtime's first polls replace.
   */
  async remove(name: string, graceMs?: number, forget = true): Promise<void> {
    const runtime = this.runtimes.get(name);
    if (!runtime) return;
    this.runtimes.delete(name);
    // Polls waiting for the budget end now; those with a request in flight get the grace period.
    runtime.client.stopWaiting();
    await this.scheduler?.remove(name, graceMs);
    await runtime.road.close();
    if (!forget) return;
    this.status.forget(name);
    this.opts.scrubber.forget(tokenSlot(name));
    this.opts.store.removeStack(name);
    await removeStackInstruments(this.opts.instruments, name);
    this.opts.starts?.forget(name);
  }

  /**
   * Brings the stacks in line with `next`. A stack whose road stays (sameRoad) keeps running and
   * takes its new settings in place (a slow connector scan in flight goes on); a new road restarts
   * it, and the new runtime takes over what still holds of the old one's knowledge (Carried);
   * others keep running untouched.
   */
  async apply(next: ExporterConfig, previous: ExporterConfig): Promise<ApplySummary> {
    const wanted = new Map(next.stacks.map((s) => [s.name, s]));
    const summary: ApplySummary = { unchanged: 0, reconfigured: 0, restarted: 0, added: 0, removed: 0 };
    const carried = new Map<string, Carried>();
    const reconfigured = new Set<string>();
    // A stack restarted by this reload joined when its old runtime did; any other new one joins now.
    const startedWith = new Set<string>();
    for (const [name, r] of [...this.runtimes]) {
      const w = wanted.get(name);
      if (!w) summary.removed++;
      else if (JSON.stringify(w) === JSON.stringify(r.config)) continue;
      else if (sameRoad(w, r.config)) {
        this.reconfigure(r, w);
        reconfigured.add(name);
        continue;
      } else summary.restarted++;
      await this.remove(name, undefined, !w);
      // Taken after the old runtime's last requests: the new one continues from there.
      // The new runtime plans with what the old one saw (connector pages, Actions, fetch rates).
      if (w) {
        const forbidden = sameCredentials(r.config, w) ? r.poller.runner.forbiddenState() : undefined;
        const history = r.readers.handOver(r.config, w);
        carried.set(name, { budget: r.client.budgetState(), client: r.client.handOver(w), ...(history ? { history } : {}), forbidden, seen: r.plan.seen() });
        if (!r.joined) startedWith.add(name);
      }
    }
    for (const stack of next.stacks) {
      const kept = this.runtimes.get(stack.name);
      // A reload is the operator's word that the CMDB may be asked again: a Retry-After pause ends.
      kept?.client.resumeAfterRateLimit();
      if (kept && reconfigured.has(stack.name)) summary.reconfigured++;
      else if (kept) summary.unchanged++;
      else {
        if (!previous.stacks.some((s) => s.name === stack.name)) summary.added++;
        void this.add(stack, { carried: carried.get(stack.name) ?? {} }, !startedWith.has(stack.name));
      }
    }
    return summary;
  }

  /**
   * The same road: the same runtime polls on with its new settings. Each part takes what is its
   * own: the client its limits, timeouts and TLS (a new dispatcher when they changed), the readers
   * their scan settings, the poller its endpoints and pace, the scheduler its jobs and intervals.
   */
  private reconfigure(runtime: StackRuntime, stack: StackConfig): void {
    const { store, instruments } = this.opts;
    const { scheduler } = this;
    runtime.client.reconfigure(stack, instruments);
    runtime.readers.reconfigure();
    const settings = pollSettings(stack);
    runtime.poller.reconfigure(stack, settings);
    runtime.plan.reconfigure(stack, settings.enabled);
    // Its gauges keep what the running parts hold; those of an endpoint just enabled start at 0.
    initStackInstruments(instruments, stack.name, settings.groups, settings.enabled, true);
    // The held series stay; their staleness limits follow the new intervals (an endpoint no longer polled loses its series).
    store.addStack(stack.name, settings.timing, stack.maxSeries);
    this.runtimes.set(stack.name, { ...runtime, config: stack });
    scheduler?.reschedule(stack.name);
  }

  /** The list endpoints of a runtime that have not finished a first poll (of it or of the one a reload replaced). */
  private firstPollsDue(r: StackRuntime): DataEndpoint[] {
    return r.poller.pending().filter((endpoint) => this.opts.store.snapshot(r.config.name, endpoint)?.up === undefined);
  }

  /**
   * /readyz as docs/configuration.md describes it; a stack restored from an earlier process's state
   * is ready at once (it serves what that one served). A stack that cannot be reached must not keep
   * the process unready, nor one added later: behind a Service, an unready pod stops every stack's
   * scrapes, not only the new one's.
   */
  readiness(): Readiness {
    const pending: Array<{ stack: string; endpoint: string }> = [];
    const joining: Array<{ stack: string; endpoint: string }> = [];
    const at = this.opts.now();
    for (const r of this.runtimes.values()) {
      if (!r.joined && (r.restored || at - r.startedAt >= r.config.timeoutSeconds)) continue;
      const due = this.firstPollsDue(r).map((endpoint) => ({ stack: r.config.name, endpoint }));
      (r.joined ? joining : pending).push(...due);
    }
    return { ready: pending.length === 0, pending, ...(joining.length > 0 ? { joining } : {}) };
  }

  /** Per stack (or the one named), what the status page shows, with what it remembers of it. */
  landing(only?: string): LandingStack[] {
    const { store, now } = this.opts;
    const { scheduler } = this;
    const at = now();
    const runtimes = [...this.runtimes.values()].filter((r) => only === undefined || r.config.name === only);
    return runtimes.map((r) => {
      const { name, intervals, disabledEndpoints } = r.config;
      const endpoints = r.poller.runner.status().map((s) => {
        const group = groupOf(s.endpoint);
        const since = scheduler?.pollingSince(name, group);
        return {
          ...s,
          ...(since === undefined ? {} : { pollingSince: since / 1000 }),
          intervalSeconds: intervals[group],
          nextPollAt: scheduler ? nextPoll(scheduler, name, group, intervals[group], at) : undefined,
          lastSuccessAt: store.snapshot(name, s.endpoint)?.lastSuccess,
        };
      });
      const skipped = DATA_ENDPOINTS.filter((e) => !r.poller.runner.enabled(e)).map((endpoint) => ({
        endpoint,
        reason: disabledEndpoints.includes(endpoint) ? ('disabled' as const) : groupOf(endpoint) === 'queries' ? ('unqueried' as const) : ('untracked' as const),
      }));
      const samples = DATA_ENDPOINTS.flatMap((e) => store.snapshot(name, e)?.samples ?? []);
      const pauses = r.client.pauses().map((p) => ({ scope: p.scope, ...(p.group ? { group: p.group } : {}), until: p.until / 1000, ...(p.status === undefined ? {} : { status: p.status }), endpoint: p.endpoint, request: p.request }));
      const jobBacklog = r.poller.runner.enabled('action_jobs') ? r.poller.jobBacklog() : undefined;
      const plan = r.plan.plan();
      const demand = { perHour: plan.total, budgetPerHour: plan.budgetPerHour, ratio: plan.ratio };
      const connectorScan = r.poller.runner.enabled('connector') ? r.readers.connectorScan() : undefined;
      const queries = r.poller.queryStatus();
      const joining = r.joined && this.firstPollsDue(r).length > 0 ? { joining: true } : {};
      return this.status.remember({ name, baseUrl: r.config.baseUrl, unauthorized: r.client.unauthorized, pauses, endpoints, skipped, samples, jobBacklog, demand, connectorScan, queries, ...joining }, at);
    });
  }

  /** Poll every endpoint of every stack once; true when every enabled endpoint succeeded. */
  async pollOnce(): Promise<boolean> {
    const all = [...this.runtimes.values()];
    await Promise.all(all.map((r) => pollAllOnce(r.poller)));
    return all.every((r) => r.poller.runner.status().every((s) => s.state === 'ok'));
  }

  /** The configurations of the stacks running now. */
  configs(): StackConfig[] {
    return [...this.runtimes.values()].map((r) => r.config);
  }

  /** The parts of a running stack's state file (src/stack-state.ts); undefined when it does not run. */
  stateParts(name: string): Record<string, unknown> | undefined {
    const r = this.runtimes.get(name);
    if (!r) return undefined;
    return { ...stackParts(name, r, this.opts.store), status: this.status.exportState(name) };
  }

  /**
   * The stack's change marks for its state's writer: the store's, with every page of a full
   * connector scan counted as a change of data (a restart goes on from the pages kept), and when an
   * endpoint's first outcome or series appeared (written at the writer's next look).
   */
  stateMarks(name: string): { readonly data: number; readonly status: number; readonly appeared?: number } | undefined {
    const marks = this.opts.store.changeMarks(name);
    const pages = this.runtimes.get(name)?.readers.stateMark() ?? 0;
    if (!marks && pages === 0) return undefined;
    return { data: (marks?.data ?? 0) + pages, status: marks?.status ?? 0, ...(marks?.appeared === undefined ? {} : { appeared: marks.appeared }) };
  }

  /** Makes the stack's parts current where they are held off the main thread (a connector scan's pages in the page worker). */
  async prepareState(name: string): Promise<void> {
    await this.runtimes.get(name)?.readers.prepareState();
  }

  /** Every stack's budget: the send times of its last minute (and of requests still waiting), in ms. */
  sendTimes(): Map<string, readonly number[]> {
    return new Map([...this.runtimes].map(([name, r]) => [name, r.client.budgetState().sendTimes]));
  }

  /**
   * Shutting down, first step: polls end (those with a request in flight get `graceMs`), the
   * runtimes stay, so that what they know can be written before closeAll().
   */
  async stopPolling(graceMs?: number): Promise<void> {
    for (const r of this.runtimes.values()) r.client.stopWaiting();
    await this.scheduler?.stop(graceMs);
  }

  async closeAll(graceMs?: number): Promise<void> {
    this.status.close();
    // Shutting down: nothing is served afterwards, so the series need not be taken apart.
    await Promise.all([...this.runtimes.keys()].map((name) => this.remove(name, graceMs, false)));
  }
}
