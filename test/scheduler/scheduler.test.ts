import { afterEach, describe, expect, it, vi } from 'vitest';
import { Registry } from 'prom-client';
import {
  nextScheduledRun,
  RETRY_FIRST_SECONDS,
  RETRY_MAX_SECONDS,
  Scheduler,
  spreadOffset,
  type CronLike,
  type Pollable,
} from '../../src/scheduler/scheduler.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { cronExpressions } from '../../src/scheduler/cron.js';
import type { GroupName } from '../../src/api/endpoints.js';
import { captureLogger } from '../helpers/log.js';
import { testStack } from '../helpers/stack.js';

/** A cron stand-in: records each job and lets the test fire it. */
function manualCron() {
  const jobs = new Map<string, { expression: string; run: () => void; stopped: boolean }>();
  const cron: CronLike = {
    schedule(expression, run, name) {
      const job = { expression, run, stopped: false };
      jobs.set(name, job);
      return { stop: () => void (job.stopped = true) };
    },
  };
  return { cron, jobs };
}

/** A poller whose polls stay open until the test releases them. */
function gatedPoller(groups: GroupName[]) {
  const calls: GroupName[] = [];
  const gates: Array<() => void> = [];
  const signals: AbortSignal[] = [];
  const poller: Pollable = {
    name: 's1',
    stack: testStack({ name: 's1' }),
    groups: () => groups,
    poll: (group, signal) => {
      calls.push(group);
      if (signal) signals.push(signal);
      // Like the real client: an abort ends the poll at once.
      return new Promise<void>((resolve) => {
        gates.push(resolve);
        signal?.addEventListener('abort', () => resolve());
      });
    },
  };
  return { poller, calls, gates, signals, releaseAll: () => gates.splice(0).forEach((g) => g()) };
}

/**
 * Runs the scheduler's timers due within 5 ms (its start-up polls at jitter 0) and what they start,
 * on the fake timers of `useSchedulerTimers`: the order of events, not the machine's speed.
 */
const tick = () => vi.advanceTimersByTimeAsync(5);
/** The scheduler's timers on vitest's fake clock (undone after each test). */
const useSchedulerTimers = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });

afterEach(() => {
  vi.useRealTimers();
});

function setup(groups: GroupName[]) {
  useSchedulerTimers();
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const log = captureLogger();
  const { cron, jobs } = manualCron();
  const clock = { ms: 1_000_000 };
  const scheduler = new Scheduler({ instruments, logger: log.logger, cron, initialJitterMs: 0, nowMs: () => clock.ms });
  const p = gatedPoller(groups);
  scheduler.add(p.poller);
  /** The exporter's own metric of stack s1, as its registry renders it. */
  const own = async (name: string) => (await instruments.registries.stack('s1')?.getSingleMetricAsString(name)) ?? '';
  return { scheduler, own, jobs, clock, ...p };
}

describe('Scheduler', () => {
  it('polls every group once at start-up, Action jobs only after the Action list', async () => {
    const s = setup(['inventory', 'license', 'actions', 'actionJobs']);
    await tick();
    expect(s.calls.sort()).toEqual(['actions', 'inventory', 'license']);
    s.releaseAll();
    await tick();
    expect(s.calls).toContain('actionJobs');
    s.releaseAll();
    await s.scheduler.stop(0);
  });

  it('schedules one cron job per group at an offset within its interval', async () => {
    const s = setup(['inventory', 'ingestion']);
    expect([...s.jobs.keys()].sort()).toEqual(['s1/ingestion', 's1/inventory']);
    const offset = spreadOffset('s1/ingestion', 60);
    expect(s.jobs.get('s1/ingestion')?.expression).toBe(`${offset} * * * * *`);
    s.releaseAll();
    await s.scheduler.stop(0);
  });

  it('a group whose interval is no cron step (45m) gets every expression of it, each starting its poll', async () => {
    const registry = new Registry();
    const instruments = createInstruments(registry, { defaultMetrics: false });
    const scheduled: Array<{ expression: string; run: () => void; name: string }> = [];
    const cron: CronLike = {
      schedule(expression, run, name) {
        scheduled.push({ expression, run, name });
        return { stop: () => undefined };
      },
    };
    useSchedulerTimers();
    const clock = { ms: 1_000_000 };
    // The start-up poll a minute away (random 1): only the cron firings below poll.
    const scheduler = new Scheduler({ instruments, logger: captureLogger().logger, cron, initialJitterMs: 60_000, random: () => 1, nowMs: () => clock.ms });
    const polls: GroupName[] = [];
    const base = testStack({ name: 's1' });
    scheduler.add({ name: 's1', stack: { ...base, intervals: { ...base.intervals, license: 2700 } }, groups: () => ['license'], poll: async (g) => void polls.push(g) });
    expect(scheduled.map((j) => j.expression)).toEqual(cronExpressions(2700, spreadOffset('s1/license', 2700)));
    expect(scheduled).toHaveLength(3);
    for (const job of scheduled) {
      clock.ms += 2_700_000;
      job.run();
      await tick();
    }
    expect(polls).toEqual(['license', 'license', 'license']);
    await scheduler.stop(0);
  });

  it('never overlaps a poll of the same group: the overlapping start is skipped and counted', async () => {
    const s = setup(['connectors']);
    await tick();
    expect(s.calls).toEqual(['connectors']);
    s.clock.ms += 300_000;
    s.jobs.get('s1/connectors')?.run();
    s.jobs.get('s1/connectors')?.run();
    await tick();
    expect(s.calls).toEqual(['connectors']);
    expect(await s.own('cmdb_poll_skipped_total')).toContain(
      'cmdb_poll_skipped_total{stack="s1",group="connectors"} 2',
    );
    s.releaseAll();
    await tick();
    s.jobs.get('s1/connectors')?.run();
    await tick();
    expect(s.calls).toEqual(['connectors', 'connectors']);
    s.releaseAll();
    await s.scheduler.stop(0);
  });

  it('says while a poll of a group runs, and since when (the status page shows "polling now")', async () => {
    const s = setup(['connectors', 'license']);
    await tick();
    expect(s.scheduler.pollingSince('s1', 'connectors')).toBe(1_000_000);
    expect(s.scheduler.pollingSince('other', 'connectors')).toBeUndefined();
    s.releaseAll();
    await tick();
    expect(s.scheduler.pollingSince('s1', 'connectors')).toBeUndefined();
    await s.scheduler.stop(0);
  });

  it('does not poll again when the cron fires moments after the start-up poll', async () => {
    const s = setup(['connectors']);
    await tick();
    s.releaseAll();
    await tick();
    s.clock.ms += 3_000;
    s.jobs.get('s1/connectors')?.run();
    await tick();
    expect(s.calls).toEqual(['connectors']);
    await s.scheduler.stop(0);
  });

  it('records the duration of each poll', async () => {
    const s = setup(['license']);
    await tick();
    s.releaseAll();
    await tick();
    expect(await s.own('cmdb_poll_duration_seconds')).toContain(
      'cmdb_poll_duration_seconds_count{stack="s1",group="license"} 1',
    );
    await s.scheduler.stop(0);
  });

  it('on stop, stops the cron jobs and aborts polls still running after the grace period', async () => {
    const s = setup(['connectors']);
    await tick();
    const stopping = s.scheduler.stop(20);
    await vi.advanceTimersByTimeAsync(20);
    await stopping;
    // the gated poll never resolves by itself: stop() returned only because the abort fired
    expect(s.signals[0]?.aborted).toBe(true);
    expect([...s.jobs.values()].every((j) => j.stopped)).toBe(true);
  }, 5000);
});

describe('Scheduler: a failed poll is retried on the back-off of its group', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /**
   * Polls that end at once and fail while `failing` holds their group (fake timers: the retries are
   * real timers, the clock is Date.now). The clock starts just after the license's scheduled poll.
   */
  function retrying(groups: GroupName[], failing: Set<GroupName>, startAt?: number) {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const license = spreadOffset('s1/license', 3600);
    vi.setSystemTime((startAt ?? 1_800_000_000 - (1_800_000_000 % 3600) + license + 1) * 1000);
    const registry = new Registry();
    const instruments = createInstruments(registry, { defaultMetrics: false });
    const { cron, jobs } = manualCron();
    const scheduler = new Scheduler({ instruments, logger: captureLogger().logger, cron, initialJitterMs: 0 });
    const calls: Array<{ group: GroupName; at: number }> = [];
    const poller: Pollable = {
      name: 's1',
      stack: testStack({ name: 's1' }),
      groups: () => groups,
      poll: async (group) => void calls.push({ group, at: Date.now() / 1000 }),
      failing: (group) => failing.has(group),
    };
    scheduler.add(poller);
    const polls = (group: GroupName) => calls.filter((c) => c.group === group).map((c) => c.at);
    return { scheduler, jobs, calls, polls };
  }

  it('30 s after the first failure, doubling, at most RETRY_MAX_SECONDS apart', async () => {
    const s = retrying(['license'], new Set(['license']));
    await vi.advanceTimersByTimeAsync(1);
    const start = s.polls('license')[0] as number;
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    const gaps = s.polls('license').map((at, i, all) => Math.round(at - (i === 0 ? start : (all[i - 1] as number))));
    expect(RETRY_FIRST_SECONDS).toBe(30);
    expect(gaps).toEqual([0, 30, 60, 120, 120, 120, 120]);
    expect(Math.max(...gaps)).toBe(RETRY_MAX_SECONDS);
    await s.scheduler.stop(0);
  });

  it('stops retrying once the group succeeds; a group failing only on a 403 (not `failing`) is not retried', async () => {
    const failing = new Set<GroupName>(['license']);
    const s = retrying(['license', 'inventory'], failing);
    await vi.advanceTimersByTimeAsync(1);
    failing.delete('license');
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(s.polls('license')).toHaveLength(2);
    expect(s.polls('inventory')).toHaveLength(1);
    await s.scheduler.stop(0);
  });

  it('never later than the next scheduled poll, and that poll is not skipped while the group fails', async () => {
    // 20 s before the license's scheduled poll: the retry would come after it.
    const license = spreadOffset('s1/license', 3600);
    const next = 1_800_000_000 - (1_800_000_000 % 3600) + license + 3600;
    const s = retrying(['license'], new Set(['license']), next - 20);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(s.polls('license')).toHaveLength(1);
    expect(s.scheduler.retryAt('s1', 'license')).toBeUndefined();
    vi.setSystemTime(next * 1000);
    s.jobs.get('s1/license')?.run();
    await vi.advanceTimersByTimeAsync(1);
    expect(s.polls('license')).toHaveLength(2);
    expect(s.scheduler.retryAt('s1', 'license')).toBe(next + RETRY_FIRST_SECONDS * 2);
    expect(nextScheduledRun('s1', 'license', 3600, next)).toBe(next + 3600);
    await s.scheduler.stop(0);
  });

  it('a group that recovers has the other failing groups retried at once', async () => {
    const failing = new Set<GroupName>(['license', 'connectors']);
    const s = retrying(['license', 'connectors'], failing);
    await vi.advanceTimersByTimeAsync(1);
    // The CMDB answers again: the license's retry succeeds, and the connectors do not wait for theirs.
    failing.clear();
    await vi.advanceTimersByTimeAsync(RETRY_FIRST_SECONDS * 1000);
    const license = s.polls('license');
    expect(license).toHaveLength(2);
    expect(s.polls('connectors').at(-1)).toBeCloseTo(license[1] as number, 0);
    await s.scheduler.stop(0);
  });

  it('failing saved queries back off like any group: a connector poll does not start them again (issue 37)', async () => {
    // Connector polls every 10 s, each followed by the queries while they are well; the queries fail.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    vi.setSystemTime(1_800_000_000_000);
    const instruments = createInstruments(new Registry(), { defaultMetrics: false });
    const { cron, jobs } = manualCron();
    const scheduler = new Scheduler({ instruments, logger: captureLogger().logger, cron, initialJitterMs: 0 });
    const calls: Array<{ group: GroupName; at: number }> = [];
    const failing = new Set<GroupName>(['queries']);
    const stack = testStack({ name: 's1' });
    scheduler.add({
      name: 's1',
      stack: { ...stack, intervals: { ...stack.intervals, connectors: 10, queries: 3600 } },
      groups: () => ['connectors', 'queries'],
      poll: async (group) => void calls.push({ group, at: Date.now() / 1000 }),
      failing: (group) => failing.has(group),
    });
    const polls = (group: GroupName) => calls.filter((c) => c.group === group).map((c) => c.at);
    await vi.advanceTimersByTimeAsync(1);
    for (let i = 0; i < 60; i++) {
      await vi.advanceTimersByTimeAsync(10_000);
      jobs.get('s1/connectors')?.run();
      await vi.advanceTimersByTimeAsync(1);
    }
    const start = polls('connectors')[0] as number;
    const gaps = polls('queries').map((at, i, all) => Math.round(at - (i === 0 ? start : (all[i - 1] as number))));
    expect(polls('connectors').length).toBeGreaterThan(60);
    // The first after the start-up connector poll, then the group's back-off: 30 s, 60 s, then 120 s.
    expect(gaps.slice(0, 5)).toEqual([0, 30, 60, 120, 120]);
    // Well again: the next connector poll is followed by the queries once more.
    failing.clear();
    await vi.advanceTimersByTimeAsync(120_000);
    const before = polls('queries').length;
    jobs.get('s1/connectors')?.run();
    await vi.advanceTimersByTimeAsync(10_000);
    jobs.get('s1/connectors')?.run();
    await vi.advanceTimersByTimeAsync(1);
    expect(polls('queries').length).toBe(before + 2);
    await scheduler.stop(0);
  });

  it('a removed stack is never retried', async () => {
    const s = retrying(['license'], new Set(['license']));
    await vi.advanceTimersByTimeAsync(1);
    await s.scheduler.remove('s1', 0);
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(s.polls('license')).toHaveLength(1);
  });
});

describe('nextScheduledRun', () => {
  it.each([10, 30, 60, 90, 300, 900, 2700, 3600, 21600, 86400])('agrees with node-cron on the next firing of a %ds job', async (interval) => {
    const { default: nodeCronLib } = await import('node-cron');
    const { cronExpressions } = await import('../../src/scheduler/cron.js');
    const { nextScheduledRun } = await import('../../src/scheduler/scheduler.js');
    const expressions = cronExpressions(interval, spreadOffset('prod/connectors', interval));
    const tasks = expressions.map((e) => nodeCronLib.createTask(e, () => undefined, { timezone: 'UTC' }));
    // Both read one frozen clock (node-cron asks `new Date()`): no firing second can pass between
    // the two computations, however slow the machine. Instants across two intervals, on and off
    // the firing seconds.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const start = Date.UTC(2027, 0, 1, 0, 0, 0);
      for (let k = 0; k < 40; k++) {
        const at = start + Math.floor((k * 2 * interval * 1000) / 40) + (k % 3 === 0 ? 0 : 250);
        vi.setSystemTime(at);
        const ours = nextScheduledRun('prod', 'connectors', interval, Date.now() / 1000);
        const theirs = Math.min(...tasks.map((t) => (t.getNextRuns(1)[0]?.getTime() ?? NaN) / 1000));
        expect(ours, new Date(at).toISOString()).toBe(theirs);
      }
    } finally {
      vi.useRealTimers();
      await Promise.all(tasks.map((t) => t.destroy()));
    }
  });

  it('is strictly after now, within one interval', async () => {
    const { nextScheduledRun } = await import('../../src/scheduler/scheduler.js');
    for (let now = 1_800_000_000; now < 1_800_000_000 + 200; now += 7) {
      const next = nextScheduledRun('a', 'license', 60, now);
      expect(next).toBeGreaterThan(now);
      expect(next - now).toBeLessThanOrEqual(60);
    }
  });

  it('reschedule: new cron jobs on the new intervals, the poll in flight neither aborted nor started again', async () => {
    const s = setup(['license', 'connectors']);
    await tick();
    expect(s.calls).toEqual(['license', 'connectors']);
    const before = s.jobs.get('s1/license');
    const stack = s.poller.stack;
    (s.poller as { stack: typeof stack }).stack = { ...stack, intervals: { ...stack.intervals, license: stack.intervals.license * 2 } };
    s.scheduler.reschedule('s1');
    expect(before?.stopped).toBe(true);
    const after = s.jobs.get('s1/license');
    expect(after).not.toBe(before);
    expect(after?.expression).not.toBe(before?.expression);
    expect(s.signals.every((signal) => !signal.aborted)).toBe(true);
    await tick();
    expect(s.calls).toEqual(['license', 'connectors']);
    // The running poll still guards against an overlapping start of its group.
    s.jobs.get('s1/connectors')?.run();
    await tick();
    expect(s.calls).toEqual(['license', 'connectors']);
    s.releaseAll();
  });

  it('reschedule: a group the stack now polls gets its job and a first poll, one it no longer polls loses its job', async () => {
    const groups: GroupName[] = ['license', 'connectors'];
    const s = setup(groups);
    await tick();
    s.releaseAll();
    await tick();
    groups.splice(0, groups.length, 'license', 'changes');
    s.scheduler.reschedule('s1');
    await tick();
    expect(s.calls).toEqual(['license', 'connectors', 'changes']);
    expect(s.jobs.get('s1/connectors')?.stopped).toBe(true);
    expect(s.jobs.get('s1/changes')?.stopped).toBe(false);
    s.releaseAll();
    await s.scheduler.stop(0);
  });
});
