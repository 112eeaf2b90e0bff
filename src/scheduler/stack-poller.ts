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
import { DATA_ENDPOINTS, GROUP_NAMES, GROUPS, type DataEndpoint, type GroupName } from '../api/endpoints.js';
import type {
  Action,
  ActionJob,
  ChangeEntry,
  ConnectorRun,
  IngestionRun,
  IngestionTask,
  LicenseRecord,
  MetricsRecord,
  NextRun,
} from '../api/schemas.js';
import { COLLECTORS, newestRun } from '../collectors/index.js';
import { StateMemory } from '../collectors/state-memory.js';
import type { Collector, CollectorContext, EndpointInputs } from '../collectors/types.js';
import type { StackConfig } from '../config/types.js';
import { CmdbHttpError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import type { SnapshotStore } from '../store/snapshot-store.js';
import { EndpointRunner, type PollResult } from './endpoint-runner.js';
import { fanOut, type Cached } from './fan-out.js';
import { spreadOffset } from './spread.js';

/** The client methods the poller uses (CmdbClient implements them). */
export interface CmdbApi {
  metricsData(signal?: AbortSignal): Promise<MetricsRecord>;
  license(signal?: AbortSignal): Promise<LicenseRecord>;
  connectorRuns(signal?: AbortSignal): Promise<ConnectorRun[]>;
  ingestionRuns(signal?: AbortSignal): Promise<IngestionRun[]>;
  ingestionNext(signal?: AbortSignal): Promise<NextRun>;
  ingestionDetail(runId: string, signal?: AbortSignal): Promise<IngestionTask[]>;
  actions(signal?: AbortSignal): Promise<Action[]>;
  actionJobs(actionId: string, signal?: AbortSignal): Promise<ActionJob[]>;
  changes(type: 'asset' | 'user', id: string, signal?: AbortSignal): Promise<ChangeEntry[]>;
}

/** Data endpoints this stack polls: not disabled, and change history only for configured names. */
export function enabledEndpoints(stack: StackConfig): DataEndpoint[] {
  return DATA_ENDPOINTS.filter((e) => {
    if (stack.disabledEndpoints.includes(e)) return false;
    if (e === 'asset_change') return stack.track.assets.length > 0;
    if (e === 'user_change') return stack.track.users.length > 0;
    return true;
  });
}

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
  private detailOf: { runId: string; status: string } | undefined;
  private readonly jobs = new Map<string, Cached<JobsCacheEntry>>();
  private readonly changeLog = { asset: new Map<string, Cached<ChangeEntry[]>>(), user: new Map<string, Cached<ChangeEntry[]>>() };

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

  async poll(group: GroupName, signal?: AbortSignal): Promise<void> {
    const { api } = this.opts;
    switch (group) {
      case 'inventory':
        return this.runner.run('metrics_data', async () => this.map('metrics_data', await api.metricsData(signal)));
      case 'license':
        return this.runner.run('license', async () => this.map('license', await api.license(signal)));
      case 'connectors':
        return this.runner.run('connector', async () => this.map('connector', await api.connectorRuns(signal)));
      case 'ingestion':
        return this.pollIngestion(signal);
      case 'actions':
        return this.runner.run('actions', async () => {
          const list = await api.actions(signal);
          this.actionList = list;
          return this.map('actions', list);
        });
      case 'actionJobs':
        return this.pollActionJobs(signal);
      case 'changes':
        await this.pollChanges('asset', signal);
        return this.pollChanges('user', signal);
    }
  }

  private async pollIngestion(signal?: AbortSignal): Promise<void> {
    const { api } = this.opts;
    let runs: IngestionRun[] | undefined;
    await this.runner.run('data_ingestion', async () => {
      runs = await api.ingestionRuns(signal);
      return this.map('data_ingestion', runs);
    });
    await this.runner.run('data_ingestion_next', async () => this.map('data_ingestion_next', await api.ingestionNext(signal)));
    if (!this.runner.enabled('data_ingestion_detail')) return;
    if (!runs) {
      this.runner.blocked('data_ingestion_detail', 'the run list (data_ingestion) could not be read');
      return;
    }
    const listed = runs;
    await this.runner.run('data_ingestion_detail', () => this.detail(listed, signal));
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
    const tasks = await this.opts.api.ingestionDetail(newest.id, signal);
    this.detailOf = { runId: newest.id, status };
    return this.map('data_ingestion_detail', { runId: newest.id, tasks });
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
        ids: actions.map((a) => a.actionId),
        cache: this.jobs,
        due: (id, cached) =>
          !cached || cached.failed === true || cached.value.lastRunAt !== lastRunAt.get(id) || now() >= cached.value.refreshAt,
        fetch: async (id) => {
          const first = !this.jobs.has(id);
          const jobs = await notFoundAsEmpty(api.actionJobs(id, signal));
          const wait = first ? refresh / 2 + spreadOffset(id, refresh / 2) : refresh;
          return { jobs, lastRunAt: lastRunAt.get(id), refreshAt: now() + wait };
        },
        concurrency: stack.maxConcurrency,
        staleAfterSeconds: stack.intervals.actionJobs * stack.staleIntervals,
        now,
      });
      const input = result.values.map(({ id, value }) => ({ actionId: id, jobs: value.jobs }));
      return this.mapPartial('action_jobs', input, result.error);
    });
  }

  private async pollChanges(type: 'asset' | 'user', signal?: AbortSignal): Promise<void> {
    const endpoint = type === 'asset' ? 'asset_change' : 'user_change';
    const { stack, api, now } = this.opts;
    const names = type === 'asset' ? stack.track.assets : stack.track.users;
    await this.runner.run(endpoint, async () => {
      const result = await fanOut<ChangeEntry[]>({
        ids: names,
        cache: this.changeLog[type],
        due: () => true,
        fetch: (id) => api.changes(type, id, signal),
        concurrency: stack.maxConcurrency,
        staleAfterSeconds: stack.intervals.changes * stack.staleIntervals,
        now,
      });
      const input = result.values.map(({ id, value }) => ({ id, entries: value }));
      return this.mapPartial(endpoint, input, result.error);
    });
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

/** An Action's job list answering 404 means the Action has no jobs (or was deleted meanwhile). */
async function notFoundAsEmpty(jobs: Promise<ActionJob[]>): Promise<ActionJob[]> {
  try {
    return await jobs;
  } catch (err) {
    if (err instanceof CmdbHttpError && err.status === 404) return [];
    throw err;
  }
}
