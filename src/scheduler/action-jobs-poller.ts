/**
 * The Action list (`actions` group) and each listed Action's jobs (`actionJobs`), fetched where
 * data can have changed (docs/design.md): when an Action's lastRunAt changed since the last fetch
 * (a run whose newest job was still running once more, one poll later), else on the slow refresh
 * (intervals.actionJobsRefresh), its first round spread over the second half of the period by
 * Action id. Job fetches are paced (actionJobsPerMinute, Pacer): what does not fit in one poll stays
 * as a backlog for the next, and each slice publishes what it fetched, so the first jobs show
 * seconds after the Action list. The list and the jobs cache are kept across a restart.
 */
import type { Action } from '../api/schemas.js';
import { jobStatus, newestJob } from '../collectors/index.js';
import type { StackConfig } from '../config/types.js';
import { fanOut, type Cached } from './fan-out.js';
import type { GroupPoller, PollContext, PollerParts } from './mapping.js';
import { pollOnce } from './once-poller.js';
import { PACED_SHARE, Pacer, SLICE_SECONDS, type Sleep } from './pacer.js';
import type { JobsCacheEntry, PollerState } from './poller-state.js';
import { spreadOffset } from './spread.js';
import { wellFormedIds } from './well-formed.js';

/** Job statuses that mean the run has not finished yet. */
const UNFINISHED = /RUNNING|PROGRESS|PENDING|QUEUED|STARTED|SCHEDULED/;

export interface ActionJobsOptions {
  /** Waits between paced job fetches. */
  readonly sleep: Sleep;
  /** Pace the fetches and end a poll by its share of the interval; off for --once (one round at the budget's pace). */
  readonly paced: boolean;
  /** Told the job-fetch backlog after the Action list and each slice of a job poll (cmdb_action_jobs_backlog). */
  readonly onBacklog?: (actions: number) => void;
}

export class ActionJobsPoller {
  private actions: readonly Action[] | undefined;
  private readonly jobs = new Map<string, Cached<JobsCacheEntry>>();
  private pacer: Pacer;

  /** The poll of the Action list. */
  readonly list: GroupPoller = {
    poll: async (ctx) => {
      await pollOnce(this.parts, 'actions', ctx, (actions) => {
        this.actions = actions;
        this.opts.onBacklog?.(this.backlog());
      });
    },
  };

  /** The poll of the listed Actions' jobs that are due, paced. */
  readonly jobPoll: GroupPoller = { poll: (ctx, stop) => this.pollJobs(ctx, stop) };

  constructor(
    private readonly parts: PollerParts,
    private readonly opts: ActionJobsOptions,
  ) {
    this.pacer = this.pacerFor(parts.stack().actionJobsPerMinute);
  }

  /** A reload changed the stack's settings (`before`: what they were): a new pace takes effect at once. */
  reconfigure(before: StackConfig): void {
    const perMinute = this.parts.stack().actionJobsPerMinute;
    if (perMinute !== before.actionJobsPerMinute) this.pacer = this.pacerFor(perMinute);
  }

  /** Listed Actions whose jobs are due but not fetched yet (the status page and cmdb_action_jobs_backlog). */
  backlog(): number {
    const actions = this.actions;
    if (!actions || !this.parts.runner.enabled('action_jobs')) return 0;
    const due = this.due(actions);
    return [...new Set(actions.map((a) => a.actionId))].filter((id) => due(id, this.jobs.get(id))).length;
  }

  /** Its part of the poller's state (--storage.path): which Action's jobs were read when, and the Actions' last runs. */
  exportState(): Pick<PollerState, 'actions' | 'jobs'> {
    const actions = this.actions?.map(({ actionId, lastRunAt }) => ({ actionId, ...(lastRunAt === undefined ? {} : { lastRunAt }) }));
    return { ...(actions ? { actions } : {}), jobs: [...this.jobs] };
  }

  restore(state: PollerState): void {
    if (state.actions) this.actions = state.actions.map((a) => ({ ...a, lastRunAt: a.lastRunAt as Action['lastRunAt'] }));
    for (const [id, entry] of state.jobs) this.jobs.set(id, entry);
  }

  private pacerFor(perMinute: number): Pacer {
    return new Pacer(perMinute, () => this.parts.now() * 1000, this.opts.sleep);
  }

  private async pollJobs(ctx: PollContext, stop?: AbortSignal): Promise<void> {
    const { runner, mapper, logger, now } = this.parts;
    const { signal } = ctx;
    if (!runner.enabled('action_jobs')) return;
    const actions = this.actions;
    if (!actions) {
      runner.blocked('action_jobs', 'the Action list (actions) has not been read yet');
      return;
    }
    const stack = this.parts.stack();
    const ids = wellFormedIds(actions.map((a) => a.actionId), 'action_jobs', logger);
    const isDue = this.due(actions);
    // An id is asked at most once per poll, also when it failed: the next poll tries it again.
    const tried = new Set<string>();
    const due = (id: string, cached: Cached<JobsCacheEntry> | undefined) => !tried.has(id) && isDue(id, cached);
    const { paced } = this.opts;
    const deadline = paced ? now() + stack.intervals.actionJobs * PACED_SHARE : Infinity;
    // Slices: each publishes what is fetched so far, until nothing is due or the poll's time is up.
    for (let left = 1; left > 0 && !signal.aborted && !stop?.aborted && now() < deadline; ) {
      const sliceEnd = Math.min(deadline, now() + SLICE_SECONDS);
      let fetched = 0;
      await runner.run(
        'action_jobs',
        async () => {
          const result = await fanOut<JobsCacheEntry>({
            ids,
            cache: this.jobs,
            due,
            fetch: (id) => (tried.add(id), this.fetchJobs(id, actions, ctx)),
            // A stop (shutdown, reload) ends the wait: the fetches in flight finish, the backlog stays.
            ...(paced ? { pace: () => this.pacer.take(sliceEnd * 1000, signal, stop, 'GET /actions/{id}/jobs') } : {}),
            concurrency: stack.maxConcurrency,
            staleAfterSeconds: stack.intervals.actionJobs * stack.staleIntervals,
            now,
          });
          left = result.left;
          fetched = result.fetched;
          const input = result.values.map(({ id, value }) => ({ id, value: value.jobs }));
          return mapper.partial('action_jobs', input, result.error);
        },
        signal,
      );
      this.opts.onBacklog?.(this.backlog());
      // A slice that could not start a single fetch before the deadline ends the poll.
      if (fetched === 0 && left > 0 && sliceEnd >= deadline) break;
    }
  }

  /** When an Action's jobs are due: never fetched, failed, a new run, a run seen running, or the slow refresh. */
  private due(actions: readonly Action[]): (id: string, cached: Cached<JobsCacheEntry> | undefined) => boolean {
    const lastRunAt = new Map(actions.map((a) => [a.actionId, a.lastRunAt]));
    const at = this.parts.now();
    return (id, cached) =>
      !cached ||
      cached.failed === true ||
      cached.value.lastRunAt !== lastRunAt.get(id) ||
      (cached.value.recheckAt !== undefined && at >= cached.value.recheckAt) ||
      at >= cached.value.refreshAt;
  }

  private async fetchJobs(id: string, actions: readonly Action[], ctx: PollContext): Promise<JobsCacheEntry> {
    const { api, now } = this.parts;
    const stack = this.parts.stack();
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
}
