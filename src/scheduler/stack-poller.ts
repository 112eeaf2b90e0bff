/**
 * Everything one stack polls, group by group: fetch through the client, map through the collectors,
 * hand the result to the runner. Requests are spent where data can have changed:
 * - ingestion detail is fetched for the newest run when its id or status changes, and on every
 *   poll while it is running;
 * - an Action's jobs are fetched once per run: when its lastRunAt changed since the last fetch; a
 *   run whose newest job was still running is fetched once more, one poll later; otherwise only on
 *   the slow refresh (intervals.actionJobsRefresh), whose first round is spread over the second half
 *   of the period by Action id, so that hundreds of Actions fetched at start-up do not all fall due
 *   in the same poll an hour later;
 * - job fetches are paced (actionJobsPerMinute, Pacer): what does not fit in one poll stays as a
 *   backlog for the next, and each slice of a poll publishes what it fetched, so the first Action
 *   jobs show (and the endpoint is ready) seconds after the Action list, not after every Action;
 * - change history is fetched for the configured names only;
 * - saved queries are counted once per rebuild of the data (query-poller.ts), which the merger rows
 *   of the connector history date.
 */
import {
  DATA_ENDPOINTS,
  descriptor,
  GROUPS,
  GROUP_NAMES,
  type CmdbApi,
  type DataEndpoint,
  type EndpointInputs,
  type GroupName,
  type ResultOf,
} from '../api/endpoints.js';
import type { Action, ChangeEntry, IngestionRun } from '../api/schemas.js';
import type { RequestContext } from '../api/request-context.js';
import { eitherSignal } from '../signals.js';
import { rebuildsOf } from '../api/connector-runs.js';
import { COLLECTORS, connectorSteps, detailRun, jobStatus, newestJob } from '../collectors/index.js';
import { StateMemory } from '../collectors/state-memory.js';
import type { Collector, CollectorContext } from '../collectors/types.js';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import type { SnapshotStore } from '../store/snapshot-store.js';
import { realClock } from '../cmdb/clock.js';
import { CmdbAbortedError } from '../errors.js';
import { EndpointRunner, type ForbiddenState, type PollResult } from './endpoint-runner.js';
import { fanOut, type Cached } from './fan-out.js';
import { pollDeadline, progressDeadline } from './deadline.js';
import { Pacer, type Sleep } from './pacer.js';
import { QueryPoller, type QueryStatus } from './query-poller.js';
import type { QueryLedgerState } from './query-ledger.js';
import { spreadOffset } from './spread.js';
import { POLLER_STATE_VERSION, type JobsCacheEntry, type PollerState } from './poller-state.js';
import type { RestoredEndpoint } from './runner-state.js';

export type { CmdbApi };

/** Data endpoints this stack polls: not disabled, and change history only for configured names. */
export function enabledEndpoints(stack: StackConfig): DataEndpoint[] {
  return DATA_ENDPOINTS.filter((e) => {
    if (stack.disabledEndpoints.includes(e)) return false;
    if (e === 'asset_change') return stack.track.assets.length > 0;
    if (e === 'user_change') return stack.track.users.length > 0;
    if (e === 'data_query' || e === 'data_metadata') return stack.queries.length > 0;
    return true;
  });
}

/** What a poll's requests carry: its signal (always set) and its deadline. */
type PollContext = RequestContext & { readonly signal: AbortSignal };

/** Endpoints asked once per poll, whose collector takes the result as it is. */
type OnceEndpoint = 'metrics_data' | 'license' | 'connector' | 'data_ingestion' | 'data_ingestion_next' | 'actions';


/** Job statuses that mean the run has not finished yet. */
const UNFINISHED = /RUNNING|PROGRESS|PENDING|QUEUED|STARTED|SCHEDULED/;

/** Seconds of one slice of a job poll: what a slice fetched is published when it ends. */
const JOB_SLICE_SECONDS = 15;
/** A job poll ends by this share of its interval, so it never runs into the next one. */
const JOB_POLL_SHARE = 0.8;

export interface StackPollerOptions {
  readonly stack: StackConfig;
  readonly api: CmdbApi;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readonly scrubber: SecretScrubber;
  /** Unix seconds. */
  readonly now: () => number;
  /** Waits between paced job fetches; default real timers. */
  readonly sleep?: Sleep;
  /**
   * Pace the job fetches and end a job poll by its share of the interval (scheduled polls, the
   * default). Off for --once: one round that fetches every due Action at the budget's pace.
   */
  readonly paced?: boolean;
  /** Told the job-fetch backlog after the Action list and each slice of a job poll (cmdb_action_jobs_backlog). */
  readonly onBacklog?: (actions: number) => void;
  /** The 403 back-offs of the stack's previous runtime (a reload with the same service and credentials). */
  readonly forbidden?: ForbiddenState;
  /** What an earlier process knew (--storage.path): the runner's endpoints, and the poller's caches. */
  readonly restored?: { readonly runner?: ReadonlyMap<DataEndpoint, RestoredEndpoint>; readonly poller?: PollerState; readonly queries?: QueryLedgerState };
}

export interface PollOptions {
  /**
   * Aborted when the stack is being stopped: requests in flight finish (the poll's signal bounds
   * them), but no new paced work starts.
   */
  readonly stop?: AbortSignal;
}

export class StackPoller {
  readonly name: string;
  readonly runner: EndpointRunner;
  private readonly states = new StateMemory();
  private actionList: readonly Action[] | undefined;
  private detailOf: { runId: string; status: string } | undefined;
  private readonly jobs = new Map<string, Cached<JobsCacheEntry>>();
  private readonly changeLog = { asset_change: new Map<string, Cached<ChangeEntry[]>>(), user_change: new Map<string, Cached<ChangeEntry[]>>() };
  private pacer: Pacer;
  private readonly queries: QueryPoller;
  /** The waits of the paced job fetches and saved queries: the options' or real timers. */
  private readonly sleep: Sleep;

  constructor(private opts: StackPollerOptions) {
    this.name = opts.stack.name;
    this.runner = new EndpointRunner({ ...opts, endpoints: enabledEndpoints(opts.stack), restored: opts.restored?.runner });
    if (opts.restored?.poller) this.restore(opts.restored.poller);
    this.sleep = opts.sleep ?? ((ms, signal) => realClock.sleep(ms, signal));
    this.pacer = new Pacer(opts.stack.actionJobsPerMinute, () => opts.now() * 1000, this.sleep);
    this.queries = new QueryPoller({
      ...opts,
      stack: () => this.opts.stack,
      reader: opts.api.queries,
      runner: this.runner,
      sleep: this.sleep,
      paced: opts.paced !== false,
      rebuildPending: () => this.runner.enabled('connector') && this.runner.pending().includes('connector'),
      map: (endpoint, input) => this.map(endpoint, input),
      ...(opts.restored?.queries ? { ledger: opts.restored.queries } : {}),
    });
  }

  /** What a restart keeps of the saved queries (the `queries` part, src/stack-state.ts). */
  queryState(): QueryLedgerState {
    return this.queries.exportState();
  }

  /** Each saved query's state, for the status page. */
  queryStatus(): QueryStatus[] {
    return this.runner.enabled('data_query') ? this.queries.status() : [];
  }

  /**
   * What a restart keeps (--storage.path): which Action's jobs were read when, the Actions' last
   * runs, the last good change history, the ingestion detail read, and the remembered states.
   */
  exportState(): PollerState {
    const actions = this.actionList?.map(({ actionId, lastRunAt }) => ({ actionId, ...(lastRunAt === undefined ? {} : { lastRunAt }) }));
    return {
      v: POLLER_STATE_VERSION,
      ...(actions ? { actions } : {}),
      jobs: [...this.jobs],
      changes: { asset_change: [...this.changeLog.asset_change], user_change: [...this.changeLog.user_change] },
      ...(this.detailOf ? { detailOf: { ...this.detailOf } } : {}),
      states: this.states.exportState(),
    };
  }

  private restore(state: PollerState): void {
    if (state.actions) this.actionList = state.actions.map((a) => ({ ...a, lastRunAt: a.lastRunAt as Action['lastRunAt'] }));
    for (const [id, entry] of state.jobs) this.jobs.set(id, entry);
    for (const endpoint of ['asset_change', 'user_change'] as const) for (const [id, entry] of state.changes[endpoint]) this.changeLog[endpoint].set(id, entry);
    if (state.detailOf) this.detailOf = { ...state.detailOf };
    // Not valid: the states are forgotten, as at a cold start (0-valued states come back as they are seen).
    this.states.restoreState(state.states);
  }

  /**
   * Endpoints that keep the stack from being ready: those asked once per poll (the lists) until
   * their first answer. Per-id endpoints (Action jobs, change history) fill in after that, paced
   * within the budget; the status page shows them pending and the job backlog.
   */
  pending(): DataEndpoint[] {
    return this.runner.pending().filter((e) => descriptor(e).fanOut !== 'each');
  }

  /** Listed Actions whose jobs are due but not fetched yet (the status page and cmdb_action_jobs_backlog). */
  jobBacklog(): number {
    const actions = this.actionList;
    if (!actions || !this.runner.enabled('action_jobs')) return 0;
    const due = this.jobsDue(actions);
    return [...new Set(actions.map((a) => a.actionId))].filter((id) => due(id, this.jobs.get(id))).length;
  }

  get stack(): StackConfig {
    return this.opts.stack;
  }

  /**
   * A reload changed settings that keep the stack's road (src/stacks.ts): later polls run under
   * `stack` (intervals, pace, tracked names, endpoints polled), the polls in flight finish under
   * the settings they started with.
   */
  reconfigure(stack: StackConfig): void {
    const before = this.opts.stack;
    this.opts = { ...this.opts, stack };
    this.runner.reconfigure(stack, enabledEndpoints(stack));
    if (before.actionJobsPerMinute !== stack.actionJobsPerMinute) {
      this.pacer = new Pacer(stack.actionJobsPerMinute, () => this.opts.now() * 1000, this.sleep);
    }
    // The saved queries keep what they counted, but for queries that changed or went.
    this.queries.reconfigure(before, stack);
  }

  /** Groups with at least one enabled endpoint. */
  groups(): GroupName[] {
    return GROUP_NAMES.filter((g) => (GROUPS[g] as readonly DataEndpoint[]).some((e) => this.runner.enabled(e)));
  }

  /**
   * Poll one group. Endpoints asked once per poll need nothing but their descriptor; the ones that
   * depend on another endpoint's answer (detail of the newest run, jobs of each listed Action,
   * change history of each tracked name) have their own method. A poll takes at most the group's
   * interval (src/scheduler/deadline.ts).
   */
  async poll(group: GroupName, outer?: AbortSignal, options: PollOptions = {}): Promise<void> {
    const interval = this.opts.stack.intervals[group];
    const { api } = this.opts;
    // A connector scan may outlast its interval while its pages keep coming: cut off only when stuck.
    const deadline =
      group === 'connectors' && api.connectorIdleSeconds && api.connectorStallSeconds !== undefined
        ? progressDeadline(outer, interval, api.connectorStallSeconds, () => api.connectorIdleSeconds?.())
        : pollDeadline(outer, interval);
    try {
      await this.pollGroup(group, deadline.context, options.stop);
    } finally {
      deadline.dispose();
    }
  }

  /**
   * True when the group's last poll left one of its endpoints failing, or not polled because the
   * one it depends on failed: the scheduler retries it on the group's back-off. A 403 is not
   * counted: it waits on its own long back-off.
   */
  failing(group: GroupName): boolean {
    const endpoints: ReadonlySet<DataEndpoint> = new Set(GROUPS[group]);
    return this.runner.status().some((s) => endpoints.has(s.endpoint) && (s.state === 'failing' || s.state === 'blocked'));
  }

  private async pollGroup(group: GroupName, ctx: PollContext, stop: AbortSignal | undefined): Promise<void> {
    switch (group) {
      case 'ingestion':
        return this.pollIngestion(ctx);
      case 'actionJobs':
        return this.pollActionJobs(ctx, stop);
      case 'changes':
        await this.pollChanges('asset_change', ctx);
        return this.pollChanges('user_change', ctx);
      case 'queries':
        return this.queries.poll(ctx, stop);
      default:
        for (const endpoint of GROUPS[group]) await this.pollOnce(endpoint as OnceEndpoint, ctx);
    }
  }

  private async pollOnce<E extends OnceEndpoint>(endpoint: E, ctx: PollContext): Promise<ResultOf<E> | undefined> {
    if (endpoint === 'connector') return (await this.pollConnectors(ctx)) as ResultOf<E> | undefined;
    let result: ResultOf<E> | undefined;
    await this.runner.run(endpoint, async () => {
      // GetArgs<E> stays unresolved for a generic E; every OnceEndpoint takes no id.
      const get = this.opts.api.get.bind(this.opts.api) as (e: E, id: undefined, c?: RequestContext) => Promise<ResultOf<E>>;
      result = await get(endpoint, undefined, ctx);
      if (endpoint === 'actions') {
        this.actionList = result as readonly Action[];
        this.opts.onBacklog?.(this.jobBacklog());
      }
      return this.map(endpoint, result as EndpointInputs[E]);
    }, ctx.signal);
    return result;
  }

  /**
   * The connector history: when the read says nothing changed (an incremental read found nothing
   * newer) and the store holds the series of an earlier success, they are still current, and
   * mapping ~1,000 runs again would only cost time.
   */
  private async pollConnectors(ctx: PollContext): Promise<ResultOf<'connector'> | undefined> {
    const { api } = this.opts;
    let runs: ResultOf<'connector'> | undefined;
    await this.runner.run('connector', async () => {
      const read = api.readConnectors ? await api.readConnectors(ctx) : { changed: true, runs: await api.get('connector', undefined, ctx) };
      runs = read.runs;
      // Kept whether or not the stack has saved queries now: a reload may add some.
      this.queries.noteRebuilds(rebuildsOf(read.runs, this.opts.stack.timezone));
      const held = this.runner.status().some((s) => s.endpoint === 'connector' && s.state === 'ok');
      if (!read.changed && held) return { kind: 'unchanged' };
      return this.mapConnectors(read.runs);
    }, ctx.signal);
    return runs;
  }

  /**
   * The connector history's mapping, a step of runs at a time with the event loop free between
   * steps: scrapes are answered meanwhile (mapping ~1,000 runs at once held it ~130 ms).
   */
  private async mapConnectors(runs: ResultOf<'connector'>): Promise<PollResult> {
    const steps = connectorSteps(runs, this.context('connector'));
    for (;;) {
      const step = steps.next();
      if (step.done) return { kind: 'samples', samples: step.value };
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private async pollIngestion(ctx: PollContext): Promise<void> {
    const runs = await this.pollOnce('data_ingestion', ctx);
    await this.pollOnce('data_ingestion_next', ctx);
    if (!this.runner.enabled('data_ingestion_detail')) return;
    if (!runs) {
      this.runner.blocked('data_ingestion_detail', 'the run list (data_ingestion) could not be read');
      return;
    }
    const listed = runs;
    await this.runner.run('data_ingestion_detail', () => this.detail(listed, ctx), ctx.signal);
  }

  private async detail(runs: readonly IngestionRun[], ctx: PollContext): Promise<PollResult> {
    const target = detailRun(runs, this.opts.stack.timezone);
    if (!target) {
      this.detailOf = undefined;
      return this.map('data_ingestion_detail', null);
    }
    const { run: newest, status, inProgress } = target;
    const known = this.detailOf;
    const same = known !== undefined && known.runId === newest.id && known.status === status;
    if (same && !inProgress) return { kind: 'unchanged' };
    if (!isWellFormed(newest.id)) {
      // No path can carry it; the run's detail is skipped, the rest of the ingestion is unaffected.
      this.opts.logger.debug({ endpoint: 'data_ingestion_detail' }, 'newest run id is not well-formed text; its detail is skipped');
      return this.map('data_ingestion_detail', null);
    }
    const tasks = await this.opts.api.get('data_ingestion_detail', newest.id, ctx);
    this.detailOf = { runId: newest.id, status };
    return this.map('data_ingestion_detail', { id: newest.id, value: tasks });
  }

  private async pollActionJobs(ctx: PollContext, stop?: AbortSignal): Promise<void> {
    const { signal } = ctx;
    if (!this.runner.enabled('action_jobs')) return;
    const actions = this.actionList;
    if (!actions) {
      this.runner.blocked('action_jobs', 'the Action list (actions) has not been read yet');
      return;
    }
    const { stack, now } = this.opts;
    const ids = wellFormedIds(actions.map((a) => a.actionId), 'action_jobs', this.opts.logger);
    const isDue = this.jobsDue(actions);
    // An id is asked at most once per poll, also when it failed: the next poll tries it again.
    const tried = new Set<string>();
    const due = (id: string, cached: Cached<JobsCacheEntry> | undefined) => !tried.has(id) && isDue(id, cached);
    const paced = this.opts.paced !== false;
    const deadline = paced ? now() + stack.intervals.actionJobs * JOB_POLL_SHARE : Infinity;
    // A paced wait ends when the stack stops (shutdown, reload): the fetches in flight finish, the
    // backlog stays, and the poll ends at once instead of pacing on through the removal's grace period.
    const pace = (sliceEnd: number) => async () => {
      if (stop?.aborted) return false;
      const waiting = eitherSignal(signal, stop);
      try {
        return await this.pacer.take(sliceEnd * 1000, waiting.signal);
      } catch {
        // The poll's own abort (deadline or shutdown) is the runner's to judge, not an error of the exporter.
        if (signal.aborted) throw new CmdbAbortedError('pacing of GET /actions/{id}/jobs');
        return false;
      } finally {
        waiting.dispose();
      }
    };
    // Slices: each publishes what is fetched so far, until nothing is due or the poll's time is up.
    for (let left = 1; left > 0 && !signal.aborted && !stop?.aborted && now() < deadline; ) {
      const sliceEnd = Math.min(deadline, now() + JOB_SLICE_SECONDS);
      let fetched = 0;
      await this.runner.run('action_jobs', async () => {
        const result = await fanOut<JobsCacheEntry>({
          ids,
          cache: this.jobs,
          due,
          fetch: (id) => (tried.add(id), this.fetchJobs(id, actions, ctx)),
          ...(paced ? { pace: pace(sliceEnd) } : {}),
          concurrency: stack.maxConcurrency,
          staleAfterSeconds: stack.intervals.actionJobs * stack.staleIntervals,
          now,
        });
        left = result.left;
        fetched = result.fetched;
        const input = result.values.map(({ id, value }) => ({ id, value: value.jobs }));
        return this.mapPartial('action_jobs', input, result.error);
      }, signal);
      this.opts.onBacklog?.(this.jobBacklog());
      // A slice that could not start a single fetch before the deadline ends the poll.
      if (fetched === 0 && left > 0 && sliceEnd >= deadline) break;
    }
  }

  /** When an Action's jobs are due: never fetched, failed, a new run, a run seen running, or the slow refresh. */
  private jobsDue(actions: readonly Action[]): (id: string, cached: Cached<JobsCacheEntry> | undefined) => boolean {
    const lastRunAt = new Map(actions.map((a) => [a.actionId, a.lastRunAt]));
    const at = this.opts.now();
    return (id, cached) =>
      !cached ||
      cached.failed === true ||
      cached.value.lastRunAt !== lastRunAt.get(id) ||
      (cached.value.recheckAt !== undefined && at >= cached.value.recheckAt) ||
      at >= cached.value.refreshAt;
  }

  private async fetchJobs(id: string, actions: readonly Action[], ctx: PollContext): Promise<JobsCacheEntry> {
    const { stack, api, now } = this.opts;
    const refresh = stack.intervals.actionJobsRefresh;
    const lastRunAt = actions.find((a) => a.actionId === id)?.lastRunAt;
    const previous = this.jobs.get(id)?.value;
    const jobs = await api.get('action_jobs', id, ctx);
    const wait = previous ? refresh : refresh / 2 + spreadOffset(id, refresh / 2);
    const newest = newestJob(jobs, stack.timezone);
    const running = newest !== undefined && UNFINISHED.test(jobStatus(newest) ?? '');
    // Once more for the same run, not at every poll: a run still going after that waits for the refresh.
    const rechecked = previous !== undefined && previous.recheckAt !== undefined && previous.lastRunAt === lastRunAt;
    const recheckAt = running && !rechecked ? now() + stack.intervals.actionJobs : undefined;
    return { jobs, lastRunAt, refreshAt: now() + wait, ...(recheckAt === undefined ? {} : { recheckAt }) };
  }

  private async pollChanges(endpoint: 'asset_change' | 'user_change', ctx: PollContext): Promise<void> {
    const { stack, api, now } = this.opts;
    const names = endpoint === 'asset_change' ? stack.track.assets : stack.track.users;
    await this.runner.run(endpoint, async () => {
      const result = await fanOut<ChangeEntry[]>({
        ids: wellFormedIds(names, endpoint, this.opts.logger),
        cache: this.changeLog[endpoint],
        due: () => true,
        fetch: (id) => api.get(endpoint, id, ctx),
        concurrency: stack.maxConcurrency,
        staleAfterSeconds: stack.intervals.changes * stack.staleIntervals,
        now,
      });
      return this.mapPartial(endpoint, result.values, result.error);
    }, ctx.signal);
  }

  private context(endpoint: DataEndpoint): CollectorContext {
    const logger = this.opts.logger;
    return {
      now: this.opts.now(),
      timeZone: this.opts.stack.timezone,
      states: this.states,
      debug: (message, fields) => logger.debug({ ...fields, endpoint }, message),
    };
  }

  private map<E extends DataEndpoint>(endpoint: E, input: EndpointInputs[E]): PollResult & { kind: 'samples' } {
    const collect: Collector<E> = COLLECTORS[endpoint];
    return { kind: 'samples', samples: collect(input, this.context(endpoint)) };
  }

  private mapPartial<E extends DataEndpoint>(endpoint: E, input: EndpointInputs[E], error: unknown): PollResult {
    const result = this.map(endpoint, input);
    if (error === undefined || result.kind !== 'samples') return result;
    return { kind: 'partial', samples: result.samples, error };
  }
}

/** Text with a lone UTF-16 surrogate: not encodable in a URL, so such an id cannot be asked for. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isWellFormed(id: string): boolean {
  return !LONE_SURROGATE.test(id);
}

/** The ids that can be asked for; one hostile id costs only itself, not its endpoint. */
function wellFormedIds(ids: readonly string[], endpoint: DataEndpoint, logger: Logger): string[] {
  const usable = ids.filter(isWellFormed);
  if (usable.length < ids.length) logger.debug({ endpoint, skipped: ids.length - usable.length }, 'ids that are not well-formed text skipped');
  return usable;
}
