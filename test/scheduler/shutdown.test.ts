/**
 * Shutdown and removal while the scheduler works: a stop while Action jobs are fetched at their
 * pace, or while requests wait for the rate budget, ends those polls at once (no "please report it"
 * error, no wait for the grace period), and a stack removed during its start-up Action-list poll
 * does not go on to poll its Action jobs.
 * Real exporter, real scheduler, real simulator.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupName } from '../../src/api/endpoints.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { Scheduler, type CronLike, type Pollable } from '../../src/scheduler/scheduler.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { waitFor } from '../helpers/wait.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { captureLogger } from '../helpers/log.js';
import { testStack } from '../helpers/stack.js';

const sims: SimulatorServer[] = [];
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

/** A grace period no test waits out: a close that waits for it never ends (a hang, which the wait's bound reports). */
const DAY_MS = 86_400_000;

/**
 * Closes the app with a grace of a day: it must close by itself (its polls end at once), so the
 * event awaited is the close, bounded against a hang only.
 */
async function closesByItself(app: { close(graceMs: number): Promise<void> }): Promise<void> {
  let closed = false;
  const closing = app.close(DAY_MS).then(() => (closed = true));
  await waitFor('the close, which only its polls ending by themselves can bring before its grace of a day', () => closed);
  await closing;
}

/** The exporter's JSON log lines. */
const logLines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { level: number; msg: string });

describe('shutdown while Action jobs are fetched', () => {
  it.each([
    // A grace of a day: the poll must end by itself, not by the abort after it.
    ['a long grace period', DAY_MS],
    // A short one: the abort after it must not read as an error of the exporter.
    ['a short grace period', 300],
  ])('with %s ends the paced job poll at once, no error logged', async (_what, graceMs) => {
    const sim = await startSimulator({ size: { actions: 20 } });
    sims.push(sim);
    // One job fetch every 10 s: the job poll spends nearly all of its time waiting for its pace.
    const stack = stackFor(sim, { actionJobsPerMinute: 6 });
    const { app, logText } = await startExporter(configFor([stack], { logLevel: 'info' }), { schedule: true, initialJitterMs: 0 });
    const jobFetches = () => sim.requests().filter((r) => r.endpoint === 'action_jobs').length;
    await waitFor('two job fetches', async () => (jobFetches() >= 2 ? true : undefined));
    const fetched = jobFetches();
    if (graceMs === DAY_MS) await closesByItself(app);
    else await app.close(graceMs);
    // A poll pacing on through the grace period would also have fetched on (one every 10 s).
    expect(jobFetches(), 'job fetches after the stop').toBeLessThanOrEqual(fetched + 1);
    const lines = logLines(logText());
    expect(lines.filter((l) => l.level >= 50), 'error lines').toEqual([]);
    expect(logText()).not.toContain('please report');
  });
});

describe('shutdown while requests wait for the rate budget', () => {
  it('ends the waiting polls at once instead of waiting out the grace period, no error logged', async () => {
    const sim = await startSimulator();
    sims.push(sim);
    // One request a minute: after the token request every group's first request waits ~60 s.
    const stack = stackFor(sim, { rateLimitPerMinute: 1 });
    const { app, logText } = await startExporter(configFor([stack], { logLevel: 'info' }), { schedule: true, initialJitterMs: 0 });
    await waitFor('the first request', async () => (sim.requests().length >= 1 ? true : undefined));
    // A grace of a day: polls that waited on would hold the close, or send their requests ~60 s in.
    await closesByItself(app);
    expect(sim.requests().length, 'nothing more was sent').toBeLessThanOrEqual(2);
    const lines = logLines(logText());
    expect(lines.filter((l) => l.level >= 40), 'warning and error lines').toEqual([]);
  });
});

describe('a stack removed during its start-up Action-list poll', () => {
  it('does not go on to poll its Action jobs', async () => {
    const registry = new Registry();
    const instruments = createInstruments(registry, { defaultMetrics: false });
    const cron: CronLike = { schedule: () => ({ stop: () => undefined }) };
    const scheduler = new Scheduler({ instruments, logger: captureLogger().logger, cron, initialJitterMs: 0 });
    /** A stack whose Action-list poll answers when the test says so. */
    const gated = (name: string) => {
      const calls: GroupName[] = [];
      let finishActions: () => void = () => undefined;
      const poller: Pollable = {
        name,
        stack: testStack({ name }),
        groups: () => ['actions', 'actionJobs'],
        poll: (group) => {
          calls.push(group);
          return group === 'actions' ? new Promise<void>((resolve) => (finishActions = resolve)) : Promise.resolve();
        },
      };
      return { poller, calls, finish: () => finishActions() };
    };
    const removedOne = gated('s1');
    // Another stack beside it, not removed: its Action jobs follow its Action list the same way.
    const kept = gated('s2');
    scheduler.add(removedOne.poller);
    scheduler.add(kept.poller);
    await waitFor('the Action-list polls', () => removedOne.calls.includes('actions') && kept.calls.includes('actions'));
    const removed = scheduler.remove('s1', 60_000);
    // The Action list answers within the grace period, after the removal began.
    removedOne.finish();
    await removed;
    // The kept stack's Action list answers after it: once its Action jobs were polled, those of the
    // removed one would have been too.
    kept.finish();
    await waitFor('the kept stack\'s Action-jobs poll', () => kept.calls.includes('actionJobs'));
    expect(removedOne.calls).toEqual(['actions']);
    await scheduler.stop(0);
  });
});
