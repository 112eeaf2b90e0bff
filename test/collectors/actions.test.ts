import { describe, expect, it } from 'vitest';
import { ActionJobListSchema, ActionPageSchema } from '../../src/api/schemas.js';
import { collectActions } from '../../src/collectors/actions.js';
import { collectActionJobs, newestJob } from '../../src/collectors/action-jobs.js';
import { StateMemory } from '../../src/collectors/state-memory.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import type { TestContext } from './helpers.js';
import { collect, context, find, fixture, fixtureText, iso, stateSet, validated, valueOf } from './helpers.js';

const HOSTILE = 'Qualys "EU" \\ line1\nline2 — Überwachung ✓ {a="b"}';

const actionsOf = (file: string) => validated(ActionPageSchema, fixture(`actions/${file}`)).actions;
const actions = (file: string, ctx: TestContext = context()) => ({ samples: collect(collectActions, actionsOf(file), ctx), ctx });
function jobsOf(file: string) {
  const byAction = fixture(`actions/${file}`) as Record<string, unknown>;
  return Object.entries(byAction).map(([actionId, body]) => ({ id: actionId, value: validated(ActionJobListSchema, body) }));
}
const jobs = (file: string, ctx: TestContext = context()) => ({ samples: collect(collectActionJobs, jobsOf(file), ctx), ctx });

describe('Action list collector (actions)', () => {
  it.each<[string, Record<string, string>]>([
    ['101', { action_name: 'Nightly export', action_type: 'EXPORT_CSV', action_group: 'Reports', schedule_type: 'SCHEDULE_BATCH_DATA' }],
    ['a-2', { action_name: 'After ingestion', action_type: 'EXPORT_CSV', action_group: 'Reports', schedule_type: 'AFTER_DATA_INGESTION' }],
    ['a-3', { action_name: HOSTILE, action_type: 'EXPORT_CSV', action_group: '', schedule_type: 'SCHEDULE_BATCH_DATA' }],
  ])('info of %s (actionId as number becomes text; hostile text unchanged; missing → "")', (actionId, labels) => {
    expect(find(actions('actions.json').samples, 'cmdb_action_info', { action_id: actionId }).map((s) => s.labels)).toEqual([
      { action_id: actionId, ...labels },
    ]);
  });

  it('keeps the first of a repeated actionId and logs the repeat at debug', () => {
    const { samples, ctx } = actions('actions.json');
    expect(find(samples, 'cmdb_action_info', { action_id: '101' })).toHaveLength(1);
    expect(stateSet(samples, 'cmdb_action_status', { action_id: '101' }, 'status')).toEqual({ RUNNING: 1 });
    expect(ctx.debugCalls.filter((c) => c.message.includes('repeated')).map((c) => c.fields?.action_id)).toEqual(['101']);
  });

  it.each<[string, string, Record<string, number>]>([
    ['101', 'RUNNING', { RUNNING: 1 }],
    ['a-2', 'another status as sent', { RUNNING: 0, PAUSED: 1 }],
    ['a-3', 'no status: every state 0', { RUNNING: 0 }],
  ])('status of %s (%s)', (actionId, _what, states) => {
    expect(stateSet(actions('actions.json').samples, 'cmdb_action_status', { action_id: actionId }, 'status')).toEqual(states);
  });

  it.each<[string, string, string, number | undefined, number | undefined]>([
    ['ISO times', '101', 'UTC', iso('2024-05-02T06:00:00Z'), iso('2024-05-03T06:00:00Z')],
    ['a zoneless lastRunAt in UTC; next run as text → no sample', 'a-2', 'UTC', iso('2024-05-02T10:00:00Z'), undefined],
    ['a zoneless lastRunAt in Europe/Berlin', 'a-2', 'Europe/Berlin', iso('2024-05-02T08:00:00Z'), undefined],
    ['unparseable times → no samples', 'a-3', 'UTC', undefined, undefined],
    ['epoch lastRunAt; zoneless nextRunAt in UTC', 'a-4', 'UTC', 1714629600, iso('2024-05-03T08:00:00Z')],
    ['epoch lastRunAt; zoneless nextRunAt in America/New_York', 'a-4', 'America/New_York', 1714629600, iso('2024-05-03T12:00:00Z')],
  ])('last and next run: %s', (_name, actionId, timeZone, last, next) => {
    const { samples } = actions('actions.json', context({ timeZone }));
    expect(valueOf(samples, 'cmdb_action_last_run_timestamp_seconds', { action_id: actionId })).toBe(last);
    expect(valueOf(samples, 'cmdb_action_next_run_timestamp_seconds', { action_id: actionId })).toBe(next);
  });

  it('logs unparseable times at debug but not the "After Next Data Ingestion" text', () => {
    const { ctx } = actions('actions.json');
    const times = ctx.debugCalls.filter((c) => c.fields?.field !== undefined).map((c) => [c.fields?.action_id, c.fields?.field]);
    expect(times).toEqual([
      ['a-3', 'lastRunAt'],
      ['a-3', 'nextRunAt'],
    ]);
  });

  it('remembers statuses across polls and forgets Actions that vanished', () => {
    const states = new StateMemory();
    actions('actions.json', context({ states }));
    const second = actions('actions-second-poll.json', context({ states })).samples;
    // STOPPED of the ignored duplicate was never recorded; RUNNING is a base state.
    expect(stateSet(second, 'cmdb_action_status', { action_id: '101' }, 'status')).toEqual({ RUNNING: 0, STOPPED: 1 });
    expect(find(second, 'cmdb_action_status', { action_id: 'a-2' })).toEqual([]);
    const third = actions('actions-third-poll.json', context({ states })).samples;
    expect(stateSet(third, 'cmdb_action_status', { action_id: 'a-2' }, 'status')).toEqual({ RUNNING: 1 });
  });
});

describe('Action jobs collector (action_jobs)', () => {
  it.each<[string, string, Record<string, number>]>([
    ['101', 'by action_status as sent; missing → unknown', { SUCCESS: 2, FAILED: 1, unknown: 1 }],
    ['a-3', 'from a content envelope', { SUCCESS: 1, PARTIAL: 1 }],
    ['a-5', 'an empty status → unknown', { unknown: 1, SUCCESS: 1 }],
  ])('job counts of %s: %s', (actionId, _what, counts) => {
    expect(stateSet(jobs('jobs.json').samples, 'cmdb_action_jobs', { action_id: actionId }, 'status')).toEqual(counts);
  });

  it('emits no samples for an Action with no jobs', () => {
    expect(find(jobs('jobs.json').samples, 'cmdb_action_jobs', { action_id: 'a-2' })).toEqual([]);
    expect(jobs('jobs.json').samples.filter((s) => s.labels.action_id === 'a-2')).toEqual([]);
  });

  it.each<[string, string, string, number | undefined, Record<string, number>, number | undefined]>([
    ['yyyy-mm-dd HH:mm:ss in UTC beats ISO', '101', 'UTC', iso('2024-05-02T06:00:00Z'), { SUCCESS: 0, FAILED: 1 }, 0],
    ['yyyy-mm-dd HH:mm:ss in Europe/Berlin', '101', 'Europe/Berlin', iso('2024-05-02T04:00:00Z'), { SUCCESS: 0, FAILED: 1 }, 0],
    ['zoneless 10:30 UTC is newer than ISO 09:00Z', 'a-3', 'UTC', iso('2024-05-02T10:30:00Z'), { SUCCESS: 1, FAILED: 0 }, 7],
    ['zoneless 10:30 Berlin (08:30Z) is older than ISO 09:00Z', 'a-3', 'Europe/Berlin', iso('2024-05-02T09:00:00Z'), { SUCCESS: 0, FAILED: 0, PARTIAL: 1 }, 3],
    ['equal dates: the later job', 'a-4', 'UTC', iso('2024-05-02T10:00:00Z'), { SUCCESS: 0, FAILED: 1 }, 2],
    ['no parseable date: the later job, its timestamp dropped', 'a-5', 'UTC', undefined, { SUCCESS: 1, FAILED: 0 }, 4],
  ])('newest job: %s', (_name, actionId, timeZone, at, status, results) => {
    const { samples } = jobs('jobs.json', context({ timeZone }));
    const key = { action_id: actionId };
    expect(valueOf(samples, 'cmdb_action_last_job_timestamp_seconds', key)).toBe(at);
    expect(stateSet(samples, 'cmdb_action_last_job_status', key, 'status')).toEqual(status);
    expect(valueOf(samples, 'cmdb_action_last_job_results', key)).toBe(results);
  });

  it('newestJob is undefined for no jobs', () => {
    expect(newestJob([])).toBeUndefined();
  });

  it('logs the unparseable date of the newest job at debug', () => {
    const { ctx } = jobs('jobs.json');
    expect(ctx.debugCalls.map((c) => [c.fields?.action_id, c.fields?.field, c.fields?.value])).toEqual([['a-5', 'action_run_date', 'yesterday']]);
  });

  it('remembers last-job states across polls and forgets Actions that vanished', () => {
    const states = new StateMemory();
    jobs('jobs.json', context({ states, timeZone: 'Europe/Berlin' }));
    const second = jobs('jobs-second-poll.json', context({ states })).samples;
    expect(stateSet(second, 'cmdb_action_last_job_status', { action_id: '101' }, 'status')).toEqual({ SUCCESS: 0, FAILED: 0, TIMEOUT: 1 });
    const third = jobs('jobs.json', context({ states })).samples;
    expect(stateSet(third, 'cmdb_action_last_job_status', { action_id: '101' }, 'status')).toEqual({ SUCCESS: 0, FAILED: 1, TIMEOUT: 0 });
    // a-3 had PARTIAL in the first poll, vanished in the second: forgotten.
    expect(stateSet(third, 'cmdb_action_last_job_status', { action_id: 'a-3' }, 'status')).toEqual({ SUCCESS: 1, FAILED: 0 });
  });

  it('keeps the first job list of an Action given twice', () => {
    const ctx = context();
    const lists = [...jobsOf('jobs-second-poll.json'), { id: '101', value: jobsOf('jobs.json')[0]?.value ?? [] }];
    const samples = collect(collectActionJobs, lists, ctx);
    expect(stateSet(samples, 'cmdb_action_jobs', { action_id: '101' }, 'status')).toEqual({ TIMEOUT: 1 });
    expect(ctx.debugCalls).toHaveLength(1);
  });

  it('never exports action_status_msg: the secrets planted in it stay out of samples and debug lines', () => {
    const planted = PLANTED_SECRETS.filter((secret) => fixtureText('actions/jobs.json').includes(secret));
    expect(planted.length).toBeGreaterThanOrEqual(3);
    const { samples, ctx } = jobs('jobs.json');
    for (const secret of planted) expect(JSON.stringify(samples) + JSON.stringify(ctx.debugCalls)).not.toContain(secret);
  });
});

describe('action job status is compared case-insensitively', () => {
  it.each(['Success', 'SUCCESS', 'success', ' success '])('%j is the SUCCESS state and counts as SUCCESS', (status) => {
    const jobs = validated(ActionJobListSchema, [
      { id: 'j2', action_run_date: '2026-07-27 06:00:04', action_status: status, action_result_number: 3 },
      { id: 'j1', action_run_date: '2026-07-26 06:00:04', action_status: 'failed', action_result_number: 0 },
    ]);
    const samples = collect(collectActionJobs, [{ id: '7', value: jobs }], context());
    expect(stateSet(samples, 'cmdb_action_last_job_status', { action_id: '7' }, 'status')).toEqual({ SUCCESS: 1, FAILED: 0 });
    expect(valueOf(samples, 'cmdb_action_jobs', { action_id: '7', status: 'SUCCESS' })).toBe(1);
    expect(valueOf(samples, 'cmdb_action_jobs', { action_id: '7', status: 'FAILED' })).toBe(1);
  });
});
