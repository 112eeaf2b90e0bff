/**
 * One node-cron job per (stack, group). Every group polls once at start-up, spread out by a small
 * jitter (Action jobs right after the Action list, which they need; saved queries after every
 * connector poll, whose merger rows tell when the data was rebuilt, unless they are failing and wait
 * for their retry); after that on its interval, at an offset derived from the stack and group names
 * so that groups and stacks do not all fire in the same second. A poll never overlaps the previous
 * poll of the same group: an overlapping start is skipped and counted. A failing group is retried
 * on its own back-off (RETRY_FIRST_SECONDS, doubling up to RETRY_MAX_SECONDS): docs/design.md, "A
 * failed poll is retried on its own back-off".
 */
import cron from 'node-cron';
import type { GroupName } from '../api/endpoints.js';
import type { Logger } from '../logger.js';
import type { Instruments } from '../metrics/instruments.js';
import { cronExpressions } from './cron.js';
import type { StackPoller } from './stack-poller.js';
import { spreadOffset } from './spread.js';

export { spreadOffset };

/** What the scheduler needs of a stack's poller; without `failing` a poll is never retried. */
export type Pollable = Pick<StackPoller, 'name' | 'stack' | 'groups' | 'poll'> & Partial<Pick<StackPoller, 'failing'>>;

/** First retry of a failed group, in seconds; each further failed poll doubles it. */
export const RETRY_FIRST_SECONDS = 30;
/** The longest a failing group waits for its retry (or its scheduled poll, when that comes first). */
export const RETRY_MAX_SECONDS = 120;

export interface CronTask {
  stop(): void;
}

/** The scheduling primitive; production uses node-cron, tests trigger jobs by hand. */
export interface CronLike {
  schedule(expression: string, run: () => void, name: string): CronTask;
}

export function nodeCron(logger: Logger): CronLike {
  const log = {
    info: (m: string) => logger.debug({ component: 'node-cron' }, m),
    warn: (m: string) => logger.debug({ component: 'node-cron' }, m),
    error: (m: string | Error) => logger.error({ component: 'node-cron' }, String(m)),
    debug: (m: string | Error) => logger.trace({ component: 'node-cron' }, String(m)),
  };
  return {
    schedule(expression, run, name) {
      // The job only starts the poll and returns: overlap is handled here, not by node-cron.
      const task = cron.schedule(expression, () => run(), { name, timezone: 'UTC', unref: true, logger: log });
      return { stop: () => void task.destroy() };
    },
  };
}

interface Job {
  running?: Promise<void>;
  /** Unix ms of the last start. */
  startedAt?: number;
  /** Polls in a row that left an endpoint of the group failing. */
  failures: number;
  retry?: NodeJS.Timeout;
  /** Unix ms when the retry is due. */
  retryAt?: number;
}

interface Entry {
  readonly poller: Pollable;
  /** Aborts the requests of polls still running when a removal's grace period is over. */
  readonly controller: AbortController;
  /** Aborted when the stack is removed: no poll starts any more, running ones start no new work. */
  readonly stopping: AbortController;
  readonly tasks: CronTask[];
  readonly timers: NodeJS.Timeout[];
  readonly jobs: Map<GroupName, Job>;
}

export interface SchedulerOptions {
  readonly instruments: Instruments;
  readonly logger: Logger;
  readonly cron: CronLike;
  /** Upper bound of the random delay before each first poll, in ms (default 2000). */
  readonly initialJitterMs?: number;
  readonly random?: () => number;
  readonly nowMs?: () => number;
}

export class Scheduler {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly opts: SchedulerOptions) {}

  add(poller: Pollable): void {
    const entry: Entry = { poller, controller: new AbortController(), stopping: new AbortController(), tasks: [], timers: [], jobs: new Map() };
    this.entries.set(poller.name, entry);
    const groups = poller.groups();
    for (const group of groups) entry.jobs.set(group, { failures: 0 });
    this.schedule(entry);
    const jitter = this.opts.initialJitterMs ?? 2000;
    const random = this.opts.random ?? Math.random;
    for (const group of groups) {
      if (group === 'actionJobs' && groups.includes('actions')) continue; // chained below
      if (group === 'queries' && groups.includes('connectors')) continue; // follows every connector poll (trigger)
      const timer = setTimeout(() => {
        const first = this.trigger(entry, group);
        if (group === 'actions' && groups.includes('actionJobs')) void first.then(() => this.trigger(entry, 'actionJobs'));
      }, Math.floor(random() * jitter));
      timer.unref();
      entry.timers.push(timer);
    }
  }

  /** While a poll of the stack's group runs: when it started (unix ms); undefined otherwise. */
  pollingSince(stack: string, group: GroupName): number | undefined {
    const job = this.entries.get(stack)?.jobs.get(group);
    return job?.running !== undefined ? job.startedAt : undefined;
  }

  /**
   * The stack's settings changed in place (a reload; `entry.poller` has the new ones): its cron jobs
   * are made again on the new intervals, a group it now polls gets its job and a first poll, a group
   * it no longer polls loses its job. Polls in flight, and the record of when each group last
   * started, are kept.
   */
  reschedule(stack: string): void {
    const entry = this.entries.get(stack);
    if (!entry) return;
    for (const t of entry.tasks.splice(0)) t.stop();
    const groups = entry.poller.groups();
    for (const [group, job] of entry.jobs) {
      if (groups.includes(group)) continue;
      clearTimeout(job.retry);
      entry.jobs.delete(group);
    }
    const added = groups.filter((g) => !entry.jobs.has(g));
    for (const group of added) entry.jobs.set(group, { failures: 0 });
    this.schedule(entry);
    for (const group of added) void this.trigger(entry, group);
  }

  private schedule(entry: Entry): void {
    const { poller } = entry;
    for (const group of entry.jobs.keys()) {
      const interval = poller.stack.intervals[group];
      // An interval such as 90s or 45m takes more than one expression (cron.ts); together they fire once an interval.
      for (const expression of cronExpressions(interval, spreadOffset(`${poller.name}/${group}`, interval))) {
        entry.tasks.push(this.opts.cron.schedule(expression, () => void this.scheduled(entry, group), `${poller.name}/${group}`));
      }
    }
  }

  /** Start a poll of the group now unless one is running (then the start is skipped and counted) or the stack is removed. */
  private trigger(entry: Entry, group: GroupName): Promise<void> {
    const job = entry.jobs.get(group);
    // Removed (a chained start-up poll, a retry): its client is closed, and a restarted stack's new
    // runtime shares its store slot, so nothing of the old one may poll any more.
    if (!job || entry.stopping.signal.aborted) return Promise.resolve();
    const stack = entry.poller.name;
    if (job.running) {
      this.opts.instruments.pollSkipped.inc({ stack, group });
      this.opts.logger.debug({ stack, group }, 'poll skipped: the previous poll of this group is still running');
      return job.running;
    }
    clearTimeout(job.retry);
    job.retry = undefined;
    job.retryAt = undefined;
    job.startedAt = this.nowMs();
    const end = this.opts.instruments.pollDuration.startTimer({ stack, group });
    job.running = entry.poller
      .poll(group, entry.controller.signal, entry.stopping.signal)
      .catch((err: unknown) => this.opts.logger.error({ stack, group, err }, 'poll crashed (this is a bug)'))
      .finally(() => {
        end();
        job.running = undefined;
        this.settle(entry, group, job);
        // The saved queries run when the data was rebuilt, which the connector history tells.
        if (group === 'connectors') this.follow(entry, 'queries');
      });
    return job.running;
  }

  /**
   * Starts `group` after another group's poll unless it is running (a following poll is no skipped
   * start) or failing: a failing group waits for its own retry (or its scheduled poll), so a query
   * that fails is not asked again at every connector poll (issue 37).
   */
  private follow(entry: Entry, group: GroupName): void {
    const job = entry.jobs.get(group);
    if (job && !job.running && job.failures === 0 && !entry.stopping.signal.aborted) void this.trigger(entry, group);
  }

  /** When the group's retry is due (unix seconds), while it waits for one. */
  retryAt(stack: string, group: GroupName): number | undefined {
    const at = this.entries.get(stack)?.jobs.get(group)?.retryAt;
    return at === undefined ? undefined : at / 1000;
  }

  /** After a poll: a failing group waits for its retry; a group that recovered has the others retried now. */
  private settle(entry: Entry, group: GroupName, job: Job): void {
    if (entry.stopping.signal.aborted) return;
    if (entry.poller.failing?.(group) !== true) {
      const recovered = job.failures > 0;
      job.failures = 0;
      if (!recovered) return;
      for (const [other, j] of entry.jobs) {
        if (other !== group && j.failures > 0 && !j.running) void this.trigger(entry, other);
      }
      return;
    }
    job.failures++;
    const { name, stack } = entry.poller;
    const now = this.nowMs();
    const delayMs = Math.min(RETRY_FIRST_SECONDS * 2 ** (job.failures - 1), RETRY_MAX_SECONDS) * 1000;
    const interval = stack.intervals[group];
    const scheduledMs = nextScheduledRun(name, group, interval, now / 1000) * 1000;
    // The scheduled poll comes first, or so soon after that a retry would only double it; that
    // poll is not skipped while the group is failing (scheduled()).
    if (now + delayMs > scheduledMs - Math.min(RETRY_FIRST_SECONDS * 1000, (interval * 1000) / 2)) return;
    job.retryAt = now + delayMs;
    job.retry = setTimeout(() => {
      job.retry = undefined;
      void this.trigger(entry, group);
    }, delayMs);
    job.retry.unref();
  }

  /** Stop a stack's jobs; in-flight polls get `graceMs` to finish, then their requests are aborted. */
  async remove(stack: string, graceMs = 5000): Promise<void> {
    const entry = this.entries.get(stack);
    if (!entry) return;
    this.entries.delete(stack);
    entry.stopping.abort();
    for (const t of entry.tasks) t.stop();
    for (const t of entry.timers) clearTimeout(t);
    for (const job of entry.jobs.values()) clearTimeout(job.retry);
    const inFlight = [...entry.jobs.values()].map((j) => j.running).filter((p): p is Promise<void> => p !== undefined);
    if (inFlight.length === 0) return;
    const timer = setTimeout(() => entry.controller.abort(), graceMs);
    await Promise.allSettled(inFlight);
    clearTimeout(timer);
  }

  async stop(graceMs = 5000): Promise<void> {
    await Promise.all([...this.entries.keys()].map((name) => this.remove(name, graceMs)));
  }

  /**
   * A cron firing: skipped silently when the group started less than half an interval ago (the
   * start-up poll, a retry) and did not fail.
   */
  private scheduled(entry: Entry, group: GroupName): Promise<void> {
    const job = entry.jobs.get(group);
    const intervalMs = entry.poller.stack.intervals[group] * 1000;
    const now = this.nowMs();
    if (job?.startedAt !== undefined && !job.running && job.failures === 0 && now - job.startedAt < intervalMs / 2) return Promise.resolve();
    return this.trigger(entry, group);
  }

  private nowMs(): number {
    return (this.opts.nowMs ?? Date.now)();
  }
}

/**
 * When the cron job of (stack, group) fires next after `now` (unix seconds): the expressions from
 * cronExpressions fire at every multiple of the interval plus the stack's offset within a UTC day,
 * and every valid interval divides a day.
 */
export function nextScheduledRun(stack: string, group: GroupName, intervalSeconds: number, now: number): number {
  const offset = spreadOffset(`${stack}/${group}`, intervalSeconds);
  const base = Math.floor(now);
  const wait = (((offset - base) % intervalSeconds) + intervalSeconds) % intervalSeconds;
  return base + (wait === 0 ? intervalSeconds : wait);
}

/** Poll every group once, Action jobs after the Action list and saved queries after the connector history (for --once). */
export async function pollAllOnce(poller: Pollable, signal?: AbortSignal): Promise<void> {
  const groups = poller.groups();
  await Promise.all(groups.filter((g) => g !== 'actionJobs' && g !== 'queries').map((g) => poller.poll(g, signal)));
  // The queries after the connector history, which dates the rebuild their counts belong to.
  await Promise.all((['actionJobs', 'queries'] as const).filter((g) => groups.includes(g)).map((g) => poller.poll(g, signal)));
}
