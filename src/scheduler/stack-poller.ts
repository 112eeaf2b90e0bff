/**
 * Everything one stack polls, group by group: fetch through the client, map through the collectors,
 * hand the result to the runner. Requests are spent where data can have changed:
 * - ingestion detail is fetched for the newest run when its id or status changes, and on every
 *   poll while it is running;
 * - an Action's jobs are fetched when its lastRunAt changed since the last fetch, and otherwise on
 *   the slow refresh (intervals.actionJobsRefresh), whose first round is spread over the second half
 *   of the period by Action id, so that hundreds of Actions fetched at start-up do not all fall due
 *   in the same poll an hour later;
 * - change history is fetched for the configured names only.
 */
import {
  DATA_ENDPOINTS,
  GROUPS,
  GROUP_NAMES,
  type CmdbApi,
  type DataEndpoint,
  type EndpointInputs,
  type GroupName,
  type ResultOf,
} from '../api/endpoints.js';
import type { Action, ActionJob, ChangeEntry, IngestionRun } from '../api/schemas.js';
import { COLLECTORS, newestRun } from '../collectors/index.js';
import { StateMemory } from '../collectors/state-memory.js';
import type { Collector, CollectorContext } from '../collectors/types.js';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import type { SnapshotStore } from '../store/snapshot-store.js';
import { pollDeadline } from './deadline.js';
import { EndpointRunner, type PollResult } from './endpoint-runner.js';
import { fanOut, type Cached } from './fan-out.js';
import { spreadOffset } from './spread.js';

export type { CmdbApi };

/** Data endpoints this stack polls: not disabled, and change history only for configured names. */
export function enabledEndpoints(stack: StackConfig): DataEndpoint[] {
  return DATA_ENDPOINTS.filter((e) => {
    if (stack.disabledEndpoints.includes(e)) return false;
    if (e === 'asset_change') return stack.track.assets.length > 0;
    if (e === 'user_change') return stack.track.users.length > 0;
    return true;
  });
}

/** Endpoints asked once per poll, whose collector takes the result as it is. */
type OnceEndpoint = 'metrics_data' | 'license' | 'connector' | 'data_ingestion' | 'data_ingestion_next' | 'actions';

interface JobsCacheEntry {
  readonly jobs: ActionJob[];
  readonly lastRunAt: unknown;
  /** When the slow refresh is due (unix seconds). */
  readonly refreshAt: number;
}

export interface StackPollerOptions {
  readonly stack: StackConfig;
  readonly api: CmdbApi;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readonly scrubber: SecretScrubber;
  /** Unix seconds. */
  readonly now: () => number;
}

export class StackPoller {
  readonly name: string;
  readonly runner: EndpointRunner;
  private readonly states = new StateMemory();
  private actionList: readonly Action[] | undefined;
  private connectorRuns: unknown;
  private detailOf: { runId: string; status: string } | undefined;
  private readonly jobs = new Map<string, Cached<JobsCacheEntry>>();
  private readonly changeLog = { asset_change: new Map<string, Cached<ChangeEntry[]>>(), user_change: new Map<string, Cached<ChangeEntry[]>>() };

  constructor(private readonly opts: StackPollerOptions) {
    this.name = opts.stack.name;
    this.runner = new EndpointRunner({ ...opts, endpoints: enabledEndpoints(opts.stack) });
  }

  get stack(): StackConfig {
    return this.opts.stack;
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
  async poll(group: GroupName, outer?: AbortSignal): Promise<void> {
    const deadline = pollDeadline(outer, this.opts.stack.intervals[group]);
    try {
      await this.pollGroup(group, deadline.signal);
    } finally {
      deadline.dispose();
    }
  }

  private async pollGroup(group: GroupName, signal: AbortSignal): Promise<void> {
    switch (group) {
      case 'ingestion':
        return this.pollIngestion(signal);
      case 'actionJobs':
        return this.pollActionJobs(signal);
      case 'changes':
        await this.pollChanges('asset_change', signal);
        return this.pollChanges('user_change', signal);
      default:
        for (const endpoint of GROUPS[group]) await this.pollOnce(endpoint as OnceEndpoint, signal);
    }
  }

  private async pollOnce<E extends OnceEndpoint>(endpoint: E, signal?: AbortSignal): Promise<ResultOf<E> | undefined> {
    let result: ResultOf<E> | undefined;
    await this.runner.run(endpoint, async () => {
      // GetArgs<E> stays unresolved for a generic E; every OnceEndpoint takes no id.
      const get = this.opts.api.get.bind(this.opts.api) as (e: E, id: undefined, s?: AbortSignal) => Promise<ResultOf<E>>;
      result = await get(endpoint, undefined, signal);
      if (endpoint === 'actions') this.actionList = result as readonly Action[];
      if (endpoint === 'connector') {
        // An incremental read that found nothing newer returns the very same array: the series
        // the store holds are still current, and mapping ~1,000 runs again would only cost time.
        const same = result === this.connectorRuns && this.runner.status().some((s) => s.endpoint === 'connector' && s.state === 'ok');
        this.connectorRuns = result;
        if (same) return { kind: 'unchanged' };
      }
      return this.map(endpoint, result as EndpointInputs[E]);
    }, signal);
    return result;
  }

  private async pollIngestion(signal?: AbortSignal): Promise<void> {
    const runs = await this.pollOnce('data_ingestion', signal);
    await this.pollOnce('data_ingestion_next', signal);
    if (!this.runner.enabled('data_ingestion_detail')) return;
    if (!runs) {
      this.runner.blocked('data_ingestion_detail', 'the run list (data_ingestion) could not be read');
      return;
    }
    const listed = runs;
    await this.runner.run('data_ingestion_detail', () => this.detail(listed, signal), signal);
  }

  private async detail(runs: readonly IngestionRun[], signal?: AbortSignal): Promise<PollResult> {
    const newest = newestRun(runs);
    if (!newest) {
      this.detailOf = undefined;
      return this.map('data_ingestion_detail', null);
    }
    const status = (newest.status ?? '').toLowerCase();
    const known = this.detailOf;
    const same = known !== undefined && known.runId === newest.id && known.status === status;
    if (same && status !== 'running') return { kind: 'unchanged' };
    if (!isWellFormed(newest.id)) {
      // No path can carry it; the run's detail is skipped, the rest of the ingestion is unaffected.
      this.opts.logger.debug({ endpoint: 'data_ingestion_detail' }, 'newest run id is not well-formed text; its detail is skipped');
      return this.map('data_ingestion_detail', null);
    }
    const tasks = await this.opts.api.get('data_ingestion_detail', newest.id, signal);
    this.detailOf = { runId: newest.id, status };
    return this.map('data_ingestion_detail', { id: newest.id, value: tasks });
  }

  private async pollActionJobs(signal?: AbortSignal): Promise<void> {
    if (!this.runner.enabled('action_jobs')) return;
    const actions = this.actionList;
    if (!actions) {
      this.runner.blocked('action_jobs', 'the Action list (actions) has not been read yet');
      return;
    }
    const { stack, api, now } = this.opts;
    const lastRunAt = new Map(actions.map((a) => [a.actionId, a.lastRunAt]));
    const refresh = stack.intervals.actionJobsRefresh;
    await this.runner.run('action_jobs', async () => {
      const result = await fanOut<JobsCacheEntry>({
        ids: wellFormedIds(actions.map((a) => a.actionId), 'action_jobs', this.opts.logger),
        cache: this.jobs,
        due: (id, cached) =>
          !cached || cached.failed === true || cached.value.lastRunAt !== lastRunAt.get(id) || now() >= cached.value.refreshAt,
        fetch: async (id) => {
          const first = !this.jobs.has(id);
          const jobs = await api.get('action_jobs', id, signal);
          const wait = first ? refresh / 2 + spreadOffset(id, refresh / 2) : refresh;
          return { jobs, lastRunAt: lastRunAt.get(id), refreshAt: now() + wait };
        },
        concurrency: stack.maxConcurrency,
        staleAfterSeconds: stack.intervals.actionJobs * stack.staleIntervals,
        now,
      });
      const input = result.values.map(({ id, value }) => ({ id, value: value.jobs }));
      return this.mapPartial('action_jobs', input, result.error);
    }, signal);
  }

  private async pollChanges(endpoint: 'asset_change' | 'user_change', signal?: AbortSignal): Promise<void> {
    const { stack, api, now } = this.opts;
    const names = endpoint === 'asset_change' ? stack.track.assets : stack.track.users;
    await this.runner.run(endpoint, async () => {
      const result = await fanOut<ChangeEntry[]>({
        ids: wellFormedIds(names, endpoint, this.opts.logger),
        cache: this.changeLog[endpoint],
        due: () => true,
        fetch: (id) => api.get(endpoint, id, signal),
        concurrency: stack.maxConcurrency,
        staleAfterSeconds: stack.intervals.changes * stack.staleIntervals,
        now,
      });
      return this.mapPartial(endpoint, result.values, result.error);
    }, signal);
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

  private map<E extends DataEndpoint>(endpoint: E, input: EndpointInputs[E]): PollResult {
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
