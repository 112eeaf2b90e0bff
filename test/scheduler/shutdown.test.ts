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

/**
 * Closes the app with a grace of 120 s and says whether it closed before half of that: "at once"
 * (milliseconds) and "after the grace" (two minutes) are far apart, whatever the machine's load.
 */
async function closedLongBeforeGrace(app: { close(graceMs: number): Promise<void> }): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const half = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), 60_000)));
  const closing = app.close(120_000);
  const early = await Promise.race([closing.then(() => true as const), half]);
  clearTimeout(timer);
  await closing;
  return early;
}

/** The exporter's JSON log lines. */
const logLines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { level: number; msg: string });

describe('shutdown while Action jobs are fetched', () => {
  it.each([
    // A grace of 2 minutes: the poll must end by itself, not by the abort after it.
    ['a long grace period', 120_000],
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
    if (graceMs > 60_000) expect(await closedLongBeforeGrace(app), 'closed at once, not after the grace period').toBe(true);
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
    // A grace of 2 minutes: polls that waited on would hold the close, or send their requests ~60 s in.
    expect(await closedLongBeforeGrace(app), 'closed at once, not after the grace period').toBe(true);
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
    const calls: GroupName[] = [];
    let finishActions: () => void = () => undefined;
    const poller: Pollable = {
      name: 's1',
      stack: testStack({ name: 's1' }),
      groups: () => ['actions', 'actionJobs'],
      poll: (group) => {
        calls.push(group);
        return group === 'actions' ? new Promise<void>((resolve) => (finishActions = resolve)) : Promise.resolve();
      },
    };
    scheduler.add(poller);
    await waitFor('the Action-list poll', async () => (calls.includes('actions') ? true : undefined));
    const removed = scheduler.remove('s1', 60_000);
    // The Action list answers within the grace period, after the removal began.
    finishActions();
    await removed;
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual(['actions']);
  });
});
