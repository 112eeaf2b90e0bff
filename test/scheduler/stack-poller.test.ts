import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { enabledEndpoints, pollSettings } from '../../src/config/endpoints.js';
import { StackPoller } from '../../src/scheduler/stack-poller.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { CmdbHttpError } from '../../src/errors.js';
import { pathsOf, type CmdbApi, type DataEndpoint } from '../../src/api/endpoints.js';
import type { Action, ActionJob, IngestionRun } from '../../src/api/schemas.js';
import type { StackConfig } from '../../src/config/types.js';
import { captureLogger } from '../helpers/log.js';
import { testStack } from '../helpers/stack.js';

/** A scripted CMDB: each method reads the current value of its field and counts its calls. */
function fakeApi() {
  const calls: Record<string, string[]> = {};
  const count = (name: string, arg = '') => (calls[name] ??= []).push(arg);
  const state = {
    runs: [] as IngestionRun[],
    runsError: undefined as Error | undefined,
    actions: [] as Action[],
    jobs: new Map<string, ActionJob[] | Error>(),
    changes: new Map<string, Error>(),
  };
  const change = (type: string, id = '') => {
    count('changes', `${type}:${id}`);
    const err = state.changes.get(id);
    if (err) throw err;
    return [{ field: 'ip', changeTimeEpoch: 1700000000 }];
  };
  const answers: { [E in DataEndpoint]: (id?: string) => unknown } = {
    metrics_data: () => (count('metricsData'), { assetCount: 1, userCount: 2 }),
    license: () => (count('license'), { licenseType: 'FULL', expireDate: '2030-01-01', customerName: 'c' }),
    connector: () => (count('connectorRuns'), []),
    data_ingestion: () => {
      count('ingestionRuns');
      if (state.runsError) throw state.runsError;
      return state.runs;
    },
    data_ingestion_next: () => (count('ingestionNext'), { next_run_at: '2030-01-01T00:00:00Z' }),
    data_ingestion_detail: (runId) => (count('ingestionDetail', runId), [{ task_id: 't1', status: 'success' }]),
    actions: () => (count('actions'), state.actions),
    action_jobs: (id = '') => {
      count('actionJobs', id);
      const jobs = state.jobs.get(id) ?? [];
      if (jobs instanceof Error) throw jobs;
      return jobs;
    },
    asset_change: (id) => change('asset', id),
    user_change: (id) => change('user', id),
    // Saved queries are read through the readers' `queries`, never get(): test/scheduler/query-poller.test.ts.
    data_metadata: () => {
      throw new Error('data_metadata is read through queries.fields()');
    },
    data_query: () => {
      throw new Error('data_query is read through queries.count()');
    },
  };
  // Like the client, build the path first: an id no URL can carry throws there (URIError).
  const get = async (endpoint: DataEndpoint, id?: string) => (pathsOf(endpoint, id), answers[endpoint]?.(id));
  const api: CmdbApi = { get: get as CmdbApi['get'] };
  return { api, calls, state };
}

function setup(overrides: Partial<StackConfig> = {}) {
  const stack = testStack({ name: 's', track: { assets: ['a1', 'a2'], users: [] }, ...overrides });
  const log = captureLogger();
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger });
  const settings = new Map(enabledEndpoints(stack).map((e) => [e, { intervalSeconds: 60, staleAfterSeconds: 180 }] as const));
  store.addStack('s', settings, 1000);
  const clock = { t: 1_700_000_000 };
  const fake = fakeApi();
  // Paced waits move the fake clock, as real time would move.
  const sleep = async (ms: number) => void (clock.t += ms / 1000);
  const poller = new StackPoller({ stack, settings: pollSettings(stack), api: fake.api, store, logger: log.logger, scrubber: log.scrubber, now: () => clock.t, sleep });
  return { poller, store, clock, ...fake };
}

const run = (id: string, status: string, start: string): IngestionRun => ({ id, status, start_date: start, run_type: 'scheduled' });
const action = (actionId: string, lastRunAt: string): Action => ({ actionId, lastRunAt, status: 'RUNNING' });

describe('ingestion detail', () => {
  it('is fetched for the newest run, then not again while that run is finished and unchanged', async () => {
    const s = setup();
    s.state.runs = [run('scheduled__old', 'success', '2026-11-20T00:00:00Z'), run('scheduled__new', 'success', '2026-11-21T00:00:00Z')];
    await s.poller.poll('ingestion');
    await s.poller.poll('ingestion');
    expect(s.calls.ingestionDetail).toEqual(['scheduled__new']);
    expect(s.store.snapshot('s', 'data_ingestion_detail')).toMatchObject({ up: 1 });
  });

  it('is fetched on every poll while the newest run is running, and once more when it finishes', async () => {
    const s = setup();
    s.state.runs = [run('scheduled__r', 'running', '2026-11-21T00:00:00Z')];
    await s.poller.poll('ingestion');
    await s.poller.poll('ingestion');
    s.state.runs = [run('scheduled__r', 'success', '2026-11-21T00:00:00Z')];
    await s.poller.poll('ingestion');
    await s.poller.poll('ingestion');
    expect(s.calls.ingestionDetail).toEqual(['scheduled__r', 'scheduled__r', 'scheduled__r']);
  });

  it('is fetched again when a newer run appears', async () => {
    const s = setup();
    s.state.runs = [run('scheduled__1', 'success', '2026-11-20T00:00:00Z')];
    await s.poller.poll('ingestion');
    s.state.runs = [...s.state.runs, run('scheduled__2', 'failed', '2026-11-21T00:00:00Z')];
    await s.poller.poll('ingestion');
    expect(s.calls.ingestionDetail).toEqual(['scheduled__1', 'scheduled__2']);
  });

  it('picks the newest run in the stack\'s time zone, as the collector does (issue 20 #3)', async () => {
    // 10:00 in Tokyo is 01:00Z: older than the 05:00Z run. Read as UTC it would be the newest.
    const s = setup({ timezone: 'Asia/Tokyo' });
    s.state.runs = [run('scheduled__zoned', 'success', '2026-11-21T05:00:00Z'), run('manual__local', 'success', '2026-11-21 10:00:00')];
    await s.poller.poll('ingestion');
    expect(s.calls.ingestionDetail).toEqual(['scheduled__zoned']);
  });

  it('is fetched on every poll while the newest run is queued, as the collector counts it in progress (issue 20 #3)', async () => {
    const s = setup();
    s.state.runs = [run('scheduled__q', 'queued', '2026-11-21T00:00:00Z')];
    await s.poller.poll('ingestion');
    await s.poller.poll('ingestion');
    expect(s.calls.ingestionDetail).toEqual(['scheduled__q', 'scheduled__q']);
  });

  it('reports down without a request when the run list cannot be read', async () => {
    const s = setup();
    s.state.runsError = new CmdbHttpError('GET /x', 500, 'Internal Server Error');
    await s.poller.poll('ingestion');
    expect(s.calls.ingestionDetail).toBeUndefined();
    expect(s.store.snapshot('s', 'data_ingestion_detail')).toMatchObject({ up: 0 });
    expect(s.store.snapshot('s', 'data_ingestion_next')).toMatchObject({ up: 1 });
  });
});

describe('connector history: an explicit {changed, runs} contract', () => {
  const runs = [{ bridge_name: 'aws_s3', profile: 'p', platform: 'aws', status: 'Success', _time: 1_700_000_000 }];

  it('maps the runs again when the read says they changed, even as the very same array, and not when it says unchanged', async () => {
    const s = setup();
    let changed = true;
    let mapped = 0;
    const api: CmdbApi = {
      get: s.api.get,
      scan: { read: async () => ({ changed, runs }) },
    };
    const log = captureLogger();
    const stack = testStack({ name: 's', track: { assets: [], users: [] } });
    const poller = new StackPoller({ stack, settings: pollSettings(stack), api, store: s.store, logger: log.logger, scrubber: log.scrubber, now: () => s.clock.t });
    const succeed = s.store.succeed.bind(s.store);
    s.store.succeed = (...args: Parameters<typeof succeed>) => (mapped++, succeed(...args));
    await poller.poll('connectors');
    await poller.poll('connectors');
    expect(mapped).toBe(2);
    changed = false;
    await poller.poll('connectors');
    expect(mapped).toBe(2);
    expect(s.store.snapshot('s', 'connector')).toMatchObject({ up: 1 });
  });
});

describe('hostile ids (a lone UTF-16 surrogate cannot be put in a URL)', () => {
  const LONE = 'x\uD800y';

  it('cost only their own Action: the others are fetched and the endpoint stays up', async () => {
    const s = setup();
    s.state.actions = [action(LONE, 't1'), action('B', 't1')];
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toEqual(['B']);
    expect(s.store.snapshot('s', 'action_jobs')).toMatchObject({ up: 1 });
  });

  it('cost only the detail of that run: no request, no failure', async () => {
    const s = setup();
    s.state.runs = [run(LONE, 'success', '2026-11-21T00:00:00Z')];
    await s.poller.poll('ingestion');
    expect(s.calls.ingestionDetail).toBeUndefined();
    expect(s.store.snapshot('s', 'data_ingestion_detail')).toMatchObject({ up: 1, samples: [] });
  });
});

describe('Action jobs', () => {
  it('wait for the Action list: before it, the endpoint reports why and makes no request', async () => {
    const s = setup();
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toBeUndefined();
    expect(s.poller.runner.status().find((e) => e.endpoint === 'action_jobs')).toMatchObject({ state: 'blocked' });
  });

  it('are fetched for an Action only when its lastRunAt changed, and on the slow refresh', async () => {
    const s = setup();
    s.state.actions = [action('A', '2026-11-21T00:00:00Z'), action('B', '2026-11-21T00:00:00Z')];
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs?.sort()).toEqual(['A', 'B']);
    s.state.actions = [action('A', '2026-11-21T01:00:00Z'), action('B', '2026-11-21T00:00:00Z')];
    await s.poller.poll('actions');
    s.clock.t += 300;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs?.slice(2)).toEqual(['A']);
    s.clock.t += 3600;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs?.slice(3).sort()).toEqual(['A', 'B']);
  });

  it('spread the first slow refresh over the second half of the period, so they do not all fall due at once', async () => {
    const s = setup();
    s.state.actions = Array.from({ length: 40 }, (_, i) => action(`action-${i}`, 't'));
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toHaveLength(40);
    s.clock.t += 1799;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toHaveLength(40);
    s.clock.t += 900;
    await s.poller.poll('actionJobs');
    const firstHalf = (s.calls.actionJobs?.length ?? 0) - 40;
    expect(firstHalf).toBeGreaterThan(5);
    expect(firstHalf).toBeLessThan(35);
    s.clock.t += 900;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toHaveLength(80);
  });

  it('keep the jobs of an Action whose refetch failed, and report the endpoint down', async () => {
    const s = setup();
    s.state.actions = [action('A', 't1')];
    s.state.jobs.set('A', [{ id: 'j', action_status: 'SUCCESS', action_run_date: '2026-11-21 00:00:00', action_result_number: 3 }]);
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    s.state.actions = [action('A', 't2')];
    s.state.jobs.set('A', new CmdbHttpError('GET /x', 503, 'Service Unavailable'));
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    const snap = s.store.snapshot('s', 'action_jobs');
    expect(snap?.up).toBe(0);
    expect(snap?.samples.find((x) => x.name === 'cmdb_action_last_job_results')?.value).toBe(3);
  });

  it('are fetched once per run: a run first seen running once more a poll later, then not at every poll', async () => {
    const s = setup();
    const job = (status: string) => [{ id: 'j', action_status: status, action_run_date: '2026-11-21 00:00:00' }];
    s.state.actions = [action('A', 't1')];
    s.state.jobs.set('A', job('RUNNING'));
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toEqual(['A']);
    s.clock.t += 300;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toEqual(['A', 'A']);
    // Still running after the second look: left to the slow refresh, not asked at every poll.
    for (let i = 0; i < 5; i++) {
      s.clock.t += 300;
      await s.poller.poll('actionJobs');
    }
    expect(s.calls.actionJobs).toEqual(['A', 'A']);
    // A new run is fetched once, and a finished one not again.
    s.state.actions = [action('A', 't2')];
    s.state.jobs.set('A', job('SUCCESS'));
    await s.poller.poll('actions');
    s.clock.t += 300;
    await s.poller.poll('actionJobs');
    s.clock.t += 300;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toEqual(['A', 'A', 'A']);
  });

  it('are paced at actionJobsPerMinute: what does not fit in a poll stays as a backlog for the next', async () => {
    // One fetch every 10 s; a poll of a 60 s interval ends by 48 s: five fetches per poll.
    const s = setup({ actionJobsPerMinute: 6, intervals: { ...testStack().intervals, actionJobs: 60 } });
    s.state.actions = Array.from({ length: 12 }, (_, i) => action(`action-${i}`, 't'));
    await s.poller.poll('actions');
    expect(s.poller.jobBacklog()).toBe(12);
    const start = s.clock.t;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toHaveLength(5);
    expect(s.poller.jobBacklog()).toBe(7);
    expect(s.clock.t - start).toBeLessThanOrEqual(48);
    // What was fetched is published: the endpoint is up with the Actions fetched so far.
    const snap = s.store.snapshot('s', 'action_jobs');
    expect(snap?.up).toBe(1);
    s.clock.t = start + 60;
    await s.poller.poll('actionJobs');
    s.clock.t = start + 120;
    await s.poller.poll('actionJobs');
    expect(s.calls.actionJobs).toHaveLength(12);
    expect(new Set(s.calls.actionJobs).size).toBe(12);
    expect(s.poller.jobBacklog()).toBe(0);
  });

  it('publish each slice of a long poll: the first Actions show before the poll ends', async () => {
    // One fetch every 2 s: slices of 15 s hold 8 and 7; the 20 Actions need three.
    const s = setup({ actionJobsPerMinute: 30 });
    s.state.actions = Array.from({ length: 20 }, (_, i) => action(`action-${i}`, 't'));
    s.state.jobs = new Map(s.state.actions.map((a) => [String(a.actionId), [{ id: 'j', action_status: 'SUCCESS', action_result_number: 1 }]]));
    const published: number[] = [];
    const succeed = s.store.succeed.bind(s.store);
    s.store.succeed = (stack, endpoint, samples, at) => {
      if (endpoint === 'action_jobs') published.push(samples.filter((x) => x.name === 'cmdb_action_last_job_results').length);
      return succeed(stack, endpoint, samples, at);
    };
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    expect(published).toEqual([8, 15, 20]);
  });

  it('forget an Action that left the list', async () => {
    const s = setup();
    s.state.actions = [action('A', 't'), action('B', 't')];
    s.state.jobs.set('B', [{ id: 'j', action_status: 'SUCCESS' }]);
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    s.state.actions = [action('A', 't')];
    await s.poller.poll('actions');
    await s.poller.poll('actionJobs');
    expect(s.store.snapshot('s', 'action_jobs')?.samples.some((x) => x.labels.action_id === 'B')).toBe(false);
  });
});

describe('change history', () => {
  it('is polled for every configured name, and a failing name keeps its last good entries', async () => {
    const s = setup();
    await s.poller.poll('changes');
    expect(s.calls.changes).toEqual(['asset:a1', 'asset:a2']);
    s.state.changes.set('a2', new CmdbHttpError('GET /x', 500, 'Internal Server Error'));
    await s.poller.poll('changes');
    const snap = s.store.snapshot('s', 'asset_change');
    expect(snap?.up).toBe(0);
    expect(new Set(snap?.samples.map((x) => x.labels.id))).toEqual(new Set(['a1', 'a2']));
  });

  it('is not polled at all when no names are configured', () => {
    const s = setup({ track: { assets: [], users: [] } });
    expect(s.poller.groups()).not.toContain('changes');
  });
});

describe('enabled endpoints', () => {
  it('leave out disabled endpoints and change history without names', () => {
    const stack = testStack({ disabledEndpoints: ['data_ingestion_next'], track: { assets: [], users: ['u'] } });
    const enabled = enabledEndpoints(stack);
    expect(enabled).not.toContain('data_ingestion_next');
    expect(enabled).not.toContain('asset_change');
    expect(enabled).toContain('user_change');
  });
});
