/**
 * What a restart keeps of the scheduler's side (--storage.path): each endpoint's state and 403
 * back-off (EndpointRunner), and the poller's caches: which Action's jobs were read when, the
 * Actions' last runs, the remembered states. Each goes out as JSON and comes back.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CmdbHttpError } from '../../src/errors.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { EndpointRunner } from '../../src/scheduler/endpoint-runner.js';
import { pollerStateFrom } from '../../src/scheduler/poller-state.js';
import { runnerStateFrom } from '../../src/scheduler/runner-state.js';
import { enabledEndpoints, pollSettings } from '../../src/config/endpoints.js';
import { StackPoller } from '../../src/scheduler/stack-poller.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { requestsTo, sim, simStack } from '../cmdb/helpers/sim.js';
import { makeClient } from '../cmdb/helpers/client.js';
import { captureLogger } from '../helpers/log.js';
import { testStack } from '../helpers/stack.js';

const json = <T>(value: T): unknown => JSON.parse(JSON.stringify(value)) as unknown;

function runnerSetup(restored?: ReturnType<typeof runnerStateFrom>) {
  const log = captureLogger();
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger });
  const stack = testStack({ name: 's', forbiddenBackoffSeconds: 900 });
  const settings = { intervalSeconds: 60, staleAfterSeconds: 180 };
  store.addStack('s', new Map([['license', settings], ['data_ingestion_next', settings], ['metrics_data', settings]]), 100);
  const clock = { t: 1000 };
  const runner = new EndpointRunner({ stack, endpoints: ['license', 'data_ingestion_next', 'metrics_data'], store, logger: log.logger, scrubber: log.scrubber, now: () => clock.t, restored });
  return { runner, log, clock };
}

describe("the runner's state across a restart", () => {
  it('a 403 back-off is waited out by the next process, a failure shows as restored, a success is no longer pending', async () => {
    const a = runnerSetup();
    await a.runner.run('data_ingestion_next', () => Promise.reject(new CmdbHttpError('GET /x', 403, 'Forbidden')));
    await a.runner.run('license', () => Promise.reject(new CmdbHttpError('GET /y', 503, 'Service Unavailable: token abc')));
    await a.runner.run('metrics_data', async () => ({ kind: 'samples', samples: [] }));
    const state = json(a.runner.exportState());
    expect(JSON.stringify(state)).not.toContain('token abc');

    const b = runnerSetup(runnerStateFrom(state));
    b.clock.t = 1100;
    let asked = 0;
    await b.runner.run('data_ingestion_next', async () => (asked++, { kind: 'samples', samples: [] }));
    expect(asked).toBe(0);
    const status = (e: string) => b.runner.status().find((s) => s.endpoint === e);
    expect(status('data_ingestion_next')).toMatchObject({ state: 'forbidden', retryAt: 1900, outcome: 'forbidden' });
    expect(status('license')).toMatchObject({ state: 'failing', outcome: '503', consecutiveFailures: 1, error: 'the last poll before the restart failed (503)' });
    expect(status('license')?.hint).toBeTruthy();
    expect(status('metrics_data')).toMatchObject({ state: 'ok', lastPollAt: 1000 });
    expect(b.runner.pending()).toEqual([]);
    // Waited out, then asked again; the 403 is not logged again as new meanwhile.
    b.clock.t = 1901;
    await b.runner.run('data_ingestion_next', async () => (asked++, { kind: 'samples', samples: [] }));
    expect(asked).toBe(1);
    expect(b.log.lines().filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('is no state with an unknown endpoint, state or outcome, or another version', () => {
    const good = { v: 1, endpoints: [{ endpoint: 'license', state: 'ok', consecutiveFailures: 0 }] };
    expect(runnerStateFrom(good)?.get('license')).toMatchObject({ state: 'ok' });
    expect(runnerStateFrom({ ...good, v: 2 })).toBeUndefined();
    expect(runnerStateFrom({ v: 1, endpoints: [{ endpoint: 'nope', state: 'ok', consecutiveFailures: 0 }] })).toBeUndefined();
    expect(runnerStateFrom({ v: 1, endpoints: [{ endpoint: 'license', state: 'great', consecutiveFailures: 0 }] })).toBeUndefined();
    expect(runnerStateFrom({ v: 1, endpoints: [{ endpoint: 'license', state: 'failing', outcome: 'secret text', consecutiveFailures: 1 }] })).toBeUndefined();
  });
});

async function pollerOn(s: Awaited<ReturnType<typeof sim>>, restored?: ReturnType<typeof pollerStateFrom>) {
  const stack = simStack(s, { name: 'p', track: { assets: [], users: [] } });
  const { client, log } = makeClient(stack);
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger });
  store.addStack('p', new Map(enabledEndpoints(stack).map((e) => [e, { intervalSeconds: 60, staleAfterSeconds: 180 }] as const)), 10_000);
  const poller = new StackPoller({ stack, settings: pollSettings(stack), api: client, store, logger: log.logger, scrubber: log.scrubber, now: () => Date.now() / 1000, paced: false, restored: restored && { poller: restored } });
  return { poller, store };
}

describe("the poller's state across a restart", () => {
  it('the next process reads no Action job it already read, even before its first read of the Action list', async () => {
    const s = await sim({ size: { actions: 8 } });
    const a = await pollerOn(s);
    await a.poller.poll('actions');
    await a.poller.poll('actionJobs');
    expect(requestsTo(s, 'action_jobs')).toHaveLength(8);
    const state = json(a.poller.exportState());

    const b = await pollerOn(s, pollerStateFrom(state, false));
    s.clearRequests();
    expect(b.poller.jobBacklog()).toBe(0);
    await b.poller.poll('actionJobs');
    expect(requestsTo(s, 'action_jobs')).toEqual([]);
    expect(b.poller.runner.status().find((x) => x.endpoint === 'action_jobs')?.state).toBe('ok');
    expect(b.store.snapshot('p', 'action_jobs')?.samples.length).toBe(a.store.snapshot('p', 'action_jobs')?.samples.length);
  });

  it('state past the restore bound has every Action due again', async () => {
    const s = await sim({ size: { actions: 8 } });
    const a = await pollerOn(s);
    await a.poller.poll('actions');
    await a.poller.poll('actionJobs');
    const b = await pollerOn(s, pollerStateFrom(json(a.poller.exportState()), true));
    expect(b.poller.jobBacklog()).toBe(8);
    s.clearRequests();
    await b.poller.poll('actionJobs');
    expect(requestsTo(s, 'action_jobs')).toHaveLength(8);
  });

  it('is no state when a job list does not validate or the version differs', async () => {
    const s = await sim({ size: { actions: 2 } });
    const a = await pollerOn(s);
    await a.poller.poll('actions');
    await a.poller.poll('actionJobs');
    const state = json(a.poller.exportState()) as Record<string, unknown>;
    expect(pollerStateFrom(state, false)).toBeDefined();
    expect(pollerStateFrom({ ...state, v: 2 }, false)).toBeUndefined();
    expect(pollerStateFrom({ ...state, jobs: [['1', { value: { jobs: 'many' }, fetchedAt: 1 }]] }, false)).toBeUndefined();
  });
});
