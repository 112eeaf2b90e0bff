/**
 * The runtime of every polled stack: its client, poller, store slot, instruments and scheduler
 * jobs, added, removed and re-applied on reload as one unit; and what the server asks of them
 * (readiness, the status page's model, a poll of everything for --once).
 */
import { DATA_ENDPOINTS, groupOf, type DataEndpoint, type GroupName } from './api/endpoints.js';
import type { BudgetState } from './cmdb/budget.js';
import { tokenSlot } from './cmdb/auth.js';
import { CmdbClient, sameCredentials, type ClientCarry } from './cmdb/client.js';
import type { PlanSeen } from './cmdb/plan.js';
import { secretsOf } from './config/redact.js';
import type { ExporterConfig, StackConfig } from './config/types.js';
import type { Logger } from './logger.js';
import { initStackInstruments, removeStackInstruments, type Instruments } from './metrics/instruments.js';
import { nextScheduledRun, pollAllOnce, type Scheduler } from './scheduler/scheduler.js';
import type { ForbiddenState } from './scheduler/endpoint-runner.js';
import { enabledEndpoints, StackPoller } from './scheduler/stack-poller.js';
import type { SecretScrubber } from './secrets.js';
import type { Readiness } from './server/http.js';
import type { LandingStack } from './server/landing.js';
import type { EndpointSettings, SnapshotStore } from './store/snapshot-store.js';

export interface StacksOptions {
  readonly instruments: Instruments;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readonly scrubber: SecretScrubber;
  /** Jobs are added here unless it is undefined (--once polls by hand). */
  readonly scheduler: Scheduler | undefined;
  /** Unix seconds. */
  readonly now: () => number;
}

/** What a reload did to the stacks. */
export interface ApplySummary {
  unchanged: number;
  /** Only the poll intervals changed: the running stack was given its new schedule. */
  rescheduled: number;
  restarted: number;
  added: number;
  removed: number;
}

interface StackRuntime {
  readonly config: StackConfig;
  /** Unix seconds when this runtime started: it holds readiness back one attempt timeout at most. */
  readonly startedAt: number;
  readonly client: CmdbClient;
  readonly poller: StackPoller;
}

/** What a stack's runtime hands to the next one on reload, so that the stack goes on where it was. */
export interface Carried {
  /** What the request budget has spent (a reload does not refill it). */
  readonly budget?: BudgetState;
  /** Token, path spellings, connector history: what still holds (CmdbClient.handOver). */
  readonly client?: ClientCarry;
  /** 403 back-offs: waited out by the new runtime too, unless the service or the credentials changed. */
  readonly forbidden?: ForbiddenState;
  /** What the old runtime's client saw (connector pages, Actions, fetch rates): the new one plans with it. */
  readonly seen?: PlanSeen;
}

/** Settings that only say when to poll: a change of nothing else reschedules the running stack. */
const SCHEDULE_KEYS: ReadonlySet<string> = new Set<keyof StackConfig>(['intervals', 'staleIntervals']);

/** The stack's settings as JSON without its top-level schedule keys. */
function withoutSchedule(stack: StackConfig): string {
  return JSON.stringify(Object.fromEntries(Object.entries(stack).filter(([key]) => !SCHEDULE_KEYS.has(key))));
}

function endpointSettings(stack: StackConfig): Map<DataEndpoint, EndpointSettings> {
  const out = new Map<DataEndpoint, EndpointSettings>();
  for (const endpoint of enabledEndpoints(stack)) {
    const intervalSeconds = stack.intervals[groupOf(endpoint)];
    out.set(endpoint, { intervalSeconds, staleAfterSeconds: intervalSeconds * stack.staleIntervals });
  }
  return out;
}

/** The group's next poll: its retry after a failure, or its scheduled poll, whichever comes first. */
function nextPoll(scheduler: Scheduler, stack: string, group: GroupName, interval: number, now: number): number {
  const scheduled = nextScheduledRun(stack, group, interval, now);
  const retry = scheduler.retryAt(stack, group);
  return retry === undefined ? scheduled : Math.min(retry, scheduled);
}

export class Stacks {
  private readonly runtimes = new Map<string, StackRuntime>();

  constructor(private readonly opts: StacksOptions) {}

  /** How many stacks this process polls (cmdb_exporter_stacks). */
  get count(): number {
    return this.runtimes.size;
  }

  /**
   * Registers every secret of `config` with the scrubber. Called before anything of the config is
   * logged or used, so a secret pasted into another key is scrubbed from the first line on.
   */
  registerSecrets(config: ExporterConfig): void {
    for (const secret of secretsOf(config)) this.opts.scrubber.add(secret);
  }

  /** `carried`: what the stack's previous runtime knew (a reload), see Carried. */
  add(stack: StackConfig, carried: Carried = {}): void {
    const { instruments, store, scrubber, scheduler, now } = this.opts;
    const logger = this.opts.logger.child({ stack: stack.name });
    const client = new CmdbClient({ stack, instruments, logger, scrubber, budget: carried.budget, carried: carried.client, enabled: enabledEndpoints(stack), seen: carried.seen });
    store.addStack(stack.name, endpointSettings(stack), stack.maxSeries);
    const onBacklog = (n: number) => instruments.actionJobsBacklog.set({ stack: stack.name }, n);
    // Without a scheduler (--once) one round fetches every Action's jobs: no pacing, no backlog left.
    const poller = new StackPoller({ stack, api: client, store, logger, scrubber, now, onBacklog, paced: scheduler !== undefined, forbidden: carried.forbidden });
    initStackInstruments(instruments, stack.name, poller.groups(), enabledEndpoints(stack));
    this.runtimes.set(stack.name, { config: stack, client, poller, startedAt: now() });
    scheduler?.add(poller);
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
    await this.opts.scheduler?.remove(name, graceMs);
    await runtime.client.close();
    if (!forget) return;
    this.opts.scrubber.forget(tokenSlot(name));
    this.opts.store.removeStack(name);
    await removeStackInstruments(this.opts.instruments, name);
  }

  /**
   * Brings the stacks in line with `next`. A stack whose poll intervals alone changed keeps running
   * and is rescheduled (a slow connector scan in flight goes on); any other change restarts it, and
   * the new runtime takes over what still holds of the old one's knowledge (Carried); others keep
   * running untouched.
   */
  async apply(next: ExporterConfig, previous: ExporterConfig): Promise<ApplySummary> {
    this.registerSecrets(next);
    const wanted = new Map(next.stacks.map((s) => [s.name, s]));
    const summary: ApplySummary = { unchanged: 0, rescheduled: 0, restarted: 0, added: 0, removed: 0 };
    const carried = new Map<string, Carried>();
    const rescheduled = new Set<string>();
    for (const [name, r] of [...this.runtimes]) {
      const w = wanted.get(name);
      if (!w) summary.removed++;
      else if (JSON.stringify(w) === JSON.stringify(r.config)) continue;
      else if (withoutSchedule(w) === withoutSchedule(r.config)) {
        this.reschedule(r, w);
        rescheduled.add(name);
        continue;
      } else summary.restarted++;
      await this.remove(name, undefined, !w);
      // Taken after the old runtime's last requests: the new one continues from there.
      // The new runtime plans with what the old one saw (connector pages, Actions, fetch rates).
      if (w) {
        const forbidden = sameCredentials(r.config, w) ? r.poller.runner.forbiddenState() : undefined;
        carried.set(name, { budget: r.client.budgetState(), client: r.client.handOver(w), forbidden, seen: r.client.planSeen() });
      }
    }
    for (const stack of next.stacks) {
      const kept = this.runtimes.get(stack.name);
      // A reload is the operator's word that the CMDB may be asked again: a Retry-After pause ends.
      kept?.client.resumeAfterRateLimit();
      if (kept && rescheduled.has(stack.name)) summary.rescheduled++;
      else if (kept) summary.unchanged++;
      else {
        if (!previous.stacks.some((s) => s.name === stack.name)) summary.added++;
        this.add(stack, carried.get(stack.name));
      }
    }
    return summary;
  }

  /** Only the intervals changed: the same runtime polls on, on its new schedule. */
  private reschedule(runtime: StackRuntime, stack: StackConfig): void {
    const { store, scheduler } = this.opts;
    runtime.poller.reschedule(stack);
    runtime.client.reschedule(stack);
    // The held series stay; their staleness limits follow the new intervals.
    store.addStack(stack.name, endpointSettings(stack), stack.maxSeries);
    this.runtimes.set(stack.name, { ...runtime, config: stack });
    scheduler?.reschedule(stack.name);
  }

  /**
   * Ready when every enabled endpoint has finished a poll (of this runtime, or of the one a reload
   * replaced), or its stack started more than one attempt timeout (timeoutSeconds) ago: a stack
   * that cannot be reached must not keep the whole process unready while its first polls run out
   * of retries; its endpoints read `cmdb_endpoint_up 0` meanwhile.
   */
  readiness(): Readiness {
    const pending: Array<{ stack: string; endpoint: string }> = [];
    const at = this.opts.now();
    for (const r of this.runtimes.values()) {
      const stack = r.config.name;
      if (at - r.startedAt >= r.config.timeoutSeconds) continue;
      for (const endpoint of r.poller.pending()) {
        if (this.opts.store.snapshot(stack, endpoint)?.up === undefined) pending.push({ stack, endpoint });
      }
    }
    return { ready: pending.length === 0, pending };
  }

  /** Per stack, what the status page shows. */
  landing(): LandingStack[] {
    const { store, scheduler, now } = this.opts;
    const at = now();
    return [...this.runtimes.values()].map((r) => {
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
      const pausedUntil = r.client.rateLimitPausedUntil();
      const jobBacklog = r.poller.runner.enabled('action_jobs') ? r.poller.jobBacklog() : undefined;
      const plan = r.client.plan();
      const demand = { perHour: plan.total, budgetPerHour: plan.budgetPerHour, ratio: plan.ratio };
      const connectorScan = r.poller.runner.enabled('connector') ? r.client.connectorScan() : undefined;
      const queries = r.poller.queryStatus();
      return { name, baseUrl: r.config.baseUrl, unauthorized: r.client.unauthorized, pausedUntil, endpoints, skipped, samples, jobBacklog, demand, connectorScan, queries };
    });
  }

  /** Poll every endpoint of every stack once; true when every enabled endpoint succeeded. */
  async pollOnce(): Promise<boolean> {
    const all = [...this.runtimes.values()];
    await Promise.all(all.map((r) => pollAllOnce(r.poller)));
    return all.every((r) => r.poller.runner.status().every((s) => s.state === 'ok'));
  }

  async closeAll(graceMs?: number): Promise<void> {
    // Shutting down: nothing is served afterwards, so the series need not be taken apart.
    await Promise.all([...this.runtimes.keys()].map((name) => this.remove(name, graceMs, false)));
  }
}
