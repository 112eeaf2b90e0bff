import { describe, expect, it } from 'vitest';
import { IngestionDetailSchema, IngestionRunListSchema, NextRunSchema } from '../../src/api/schemas.js';
import { collectIngestionRuns, newestRun } from '../../src/collectors/ingestion-runs.js';
import { collectIngestionNext } from '../../src/collectors/ingestion-next.js';
import { collectIngestionDetail } from '../../src/collectors/ingestion-detail.js';
import { StateMemory } from '../../src/collectors/state-memory.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import type { TestContext } from './helpers.js';
import { collect, context, find, fixture, fixtureText, iso, stateSet, validated, valueOf } from './helpers.js';

const HOSTILE = 'Qualys "EU" \\ line1\nline2 — Überwachung ✓ {a="b"}';

const runsOf = (file: string) => validated(IngestionRunListSchema, fixture(`ingestion/${file}`)).data_ingestion_runs;
const runs = (file: string, ctx: TestContext = context()) => ({ samples: collect(collectIngestionRuns, runsOf(file), ctx), ctx });
const next = (file: string, ctx: TestContext = context()) => ({
  samples: collect(collectIngestionNext, validated(NextRunSchema, fixture(`ingestion/${file}`)), ctx),
  ctx,
});
function detailOf(file: string) {
  const { runId, body } = fixture(`ingestion/${file}`) as { runId: string; body: unknown };
  return { id: runId, value: validated(IngestionDetailSchema, body).task_list };
}
const detail = (file: string, ctx: TestContext = context()) => ({ samples: collect(collectIngestionDetail, detailOf(file), ctx), ctx });

describe('ingestion runs collector (data_ingestion)', () => {
  it.each<[string, string, Record<string, number>, number]>([
    ['running with end_date absent', 'runs-running-end-absent.json', { success: 1, running: 1, failed: 1 }, 1],
    ['running with end_date null, status in any case', 'runs-running-end-null.json', { running: 1, success: 1 }, 1],
    ['all finished; statuses lowercased, missing → unknown, other Airflow states kept', 'runs-finished.json', { success: 2, up_for_retry: 1, unknown: 1, failed: 1 }, 0],
    ['an empty list', 'runs-empty.json', {}, 0],
    ['a bare array body', 'runs-bare-array.json', { success: 1 }, 0],
  ])('counts by status and in-progress: %s', (_name, file, counts, inProgress) => {
    const { samples } = runs(file);
    expect(stateSet(samples, 'cmdb_ingestion_runs', {}, 'status')).toEqual(counts);
    expect(valueOf(samples, 'cmdb_ingestion_run_in_progress')).toBe(inProgress);
  });

  it.each<[string, string, string | undefined]>([
    ['greatest start_date wins regardless of list order', 'runs-running-end-absent.json', 'scheduled__2024-05-03T00:00:00+00:00'],
    ['start_date offsets compared as instants', 'runs-finished.json', 'manual__2024-05-02T06:00:00+00:00'],
    ['the time inside the id when start_date is absent', 'runs-id-fallback.json', 'scheduled__2024-05-03T00:00:00+00:00'],
    ['the id time when start_date does not parse', 'runs-bad-dates.json', 'scheduled__2024-05-03T00:00:00+00:00'],
    ['equal start dates: the later in the list', 'runs-tie.json', 'manual__2024-05-03T00:00:00+00:00'],
    ['none for an empty list', 'runs-empty.json', undefined],
  ])('newestRun: %s', (_name, file, id) => {
    expect(newestRun(runsOf(file), 'UTC')?.id).toBe(id);
  });

  it('newestRun picks the only run even when it has no time at all', () => {
    expect(newestRun([{ id: 'no-time-here' }], 'UTC')?.id).toBe('no-time-here');
  });

  it.each<[string, string, Record<string, number | undefined>, Record<string, number>]>([
    [
      'running newest run: start, no duration from it, last success and duration from finished runs',
      'runs-running-end-absent.json',
      {
        cmdb_ingestion_last_run_start_timestamp_seconds: iso('2024-05-03T00:00:04Z') + 0.000001,
        cmdb_ingestion_last_success_timestamp_seconds: iso('2024-05-01T00:40:05Z') + 0.123456,
        cmdb_ingestion_last_run_duration_seconds: 600, // the failed run of 05-02 is the newest finished one
      },
      { running: 1, success: 0, failed: 0 },
    ],
    [
      'end_date null counts as not finished',
      'runs-running-end-null.json',
      {
        cmdb_ingestion_last_run_start_timestamp_seconds: iso('2024-05-03T00:00:04Z'),
        cmdb_ingestion_last_success_timestamp_seconds: iso('2024-05-02T00:30:03Z'),
        cmdb_ingestion_last_run_duration_seconds: 1800,
      },
      { running: 1, success: 0, failed: 0 },
    ],
    [
      'newest by instant; missing status gives all states 0; last success among "success" in any case',
      'runs-finished.json',
      {
        cmdb_ingestion_last_run_start_timestamp_seconds: iso('2024-05-02T06:00:00Z'),
        cmdb_ingestion_last_success_timestamp_seconds: iso('2024-05-01T00:25:00Z'),
        cmdb_ingestion_last_run_duration_seconds: 60,
      },
      { running: 0, success: 0, failed: 0 },
    ],
    [
      'no start_date: no start sample, no duration',
      'runs-id-fallback.json',
      {
        cmdb_ingestion_last_run_start_timestamp_seconds: undefined,
        cmdb_ingestion_last_success_timestamp_seconds: iso('2024-05-02T00:30:00Z'),
        cmdb_ingestion_last_run_duration_seconds: undefined,
      },
      { running: 0, success: 0, failed: 1 },
    ],
    [
      'unparseable dates drop their samples only',
      'runs-bad-dates.json',
      {
        cmdb_ingestion_last_run_start_timestamp_seconds: undefined,
        cmdb_ingestion_last_success_timestamp_seconds: undefined,
        cmdb_ingestion_last_run_duration_seconds: undefined,
      },
      { running: 0, success: 0, failed: 1 },
    ],
    [
      'an end before the start gives no duration',
      'runs-end-before-start.json',
      {
        cmdb_ingestion_last_run_start_timestamp_seconds: iso('2024-05-03T01:00:00Z'),
        cmdb_ingestion_last_success_timestamp_seconds: iso('2024-05-03T00:10:00Z'),
        cmdb_ingestion_last_run_duration_seconds: undefined,
      },
      { running: 0, success: 1, failed: 0 },
    ],
  ])('newest-run samples: %s', (_name, file, values, status) => {
    const { samples } = runs(file);
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) expect(find(samples, name), name).toEqual([]);
      else expect(valueOf(samples, name), name).toBeCloseTo(value, 6);
    }
    expect(stateSet(samples, 'cmdb_ingestion_last_run_status', {}, 'status')).toEqual(status);
  });

  it('logs each unparseable date it drops at debug', () => {
    const { ctx } = runs('runs-bad-dates.json');
    expect(ctx.debugCalls.map((c) => [c.fields?.field, c.fields?.run_id])).toEqual([
      ['start_date', 'scheduled__2024-05-03T00:00:00+00:00'],
      ['end_date', 'scheduled__2024-05-02T00:00:00+00:00'],
      ['start_date', 'scheduled__2024-05-03T00:00:00+00:00'],
    ]);
  });

  it('emits no last-run samples for an empty list', () => {
    const { samples } = runs('runs-empty.json');
    expect(samples).toEqual([{ name: 'cmdb_ingestion_run_in_progress', labels: {}, value: 0 }]);
  });

  it('remembers other last-run states seen since start-up, and forgets them when the list empties', () => {
    const states = new StateMemory();
    const first = runs('runs-newest-queued.json', context({ states })).samples;
    expect(stateSet(first, 'cmdb_ingestion_last_run_status', {}, 'status')).toEqual({ running: 0, success: 0, failed: 0, queued: 1 });
    const second = runs('runs-running-end-absent.json', context({ states })).samples;
    expect(stateSet(second, 'cmdb_ingestion_last_run_status', {}, 'status')).toEqual({ running: 1, success: 0, failed: 0, queued: 0 });
    const empty = runs('runs-empty.json', context({ states })).samples;
    expect(find(empty, 'cmdb_ingestion_last_run_status')).toEqual([]);
    const fourth = runs('runs-running-end-absent.json', context({ states })).samples;
    expect(stateSet(fourth, 'cmdb_ingestion_last_run_status', {}, 'status')).toEqual({ running: 1, success: 0, failed: 0 });
  });
});

describe('next-run collector (data_ingestion_next)', () => {
  it.each<[string, string, string, number | undefined, Record<string, string> | undefined, number]>([
    ['a time', 'next-time.json', 'UTC', iso('2024-05-04T00:00:00Z'), { schedule: '0 0 * * *', schedule_type: 'CronExpression' }, 0],
    ['the in-progress text: no sample and no debug line', 'next-in-progress.json', 'UTC', undefined, { schedule: '0 0 * * *', schedule_type: 'CronExpression' }, 0],
    ['an impossible date: no sample, one debug line; schedule type missing → ""', 'next-garbage.json', 'UTC', undefined, { schedule: '*/5 * * * *', schedule_type: '' }, 1],
    ['a zoneless time read in the stack zone', 'next-zoneless.json', 'Europe/Berlin', iso('2024-05-04T00:00:00Z'), { schedule: '', schedule_type: 'CronExpression' }, 0],
    ['epoch seconds, no schedule: no info sample', 'next-only-time.json', 'UTC', 1714780800, undefined, 0],
    ['hostile schedule text passed through unchanged', 'next-hostile-schedule.json', 'UTC', undefined, { schedule: HOSTILE, schedule_type: 'Cron"Expression"\\' }, 0],
  ])('%s', (_name, file, timeZone, at, schedule, debugCalls) => {
    const { samples, ctx } = next(file, context({ timeZone }));
    expect(valueOf(samples, 'cmdb_ingestion_next_run_timestamp_seconds')).toBe(at);
    expect(find(samples, 'cmdb_ingestion_schedule_info')).toEqual(schedule ? [{ name: 'cmdb_ingestion_schedule_info', labels: schedule, value: 1 }] : []);
    expect(ctx.debugCalls).toHaveLength(debugCalls);
  });
});

describe('task detail collector (data_ingestion_detail)', () => {
  it('emits nothing for no run at all', () => {
    const ctx = context();
    expect(collect(collectIngestionDetail, null, ctx)).toEqual([]);
  });

  it.each<[string, string, Record<string, number>]>([
    ['extract', 'success', { success: 1, failed: 0, running: 0 }],
    ['transform', 'FAILED lowercased', { success: 0, failed: 1, running: 0 }],
    ['load', 'running', { success: 0, failed: 0, running: 1 }],
    ['notify', 'another Airflow state', { success: 0, failed: 0, running: 0, upstream_failed: 1 }],
    ['report', 'success', { success: 1, failed: 0, running: 0 }],
  ])('task status of %s (%s)', (taskId, _what, states) => {
    expect(stateSet(detail('detail.json').samples, 'cmdb_ingestion_task_status', { task_id: taskId }, 'status')).toEqual(states);
  });

  it.each<[string, number | undefined]>([
    ['extract', 300.5],
    ['transform', 60],
    ['load', undefined], // running, no end
    ['notify', undefined], // no dates (null end)
    ['report', undefined], // start does not parse
    ['backwards', undefined], // end before start
  ])('task duration of %s', (taskId, seconds) => {
    expect(valueOf(detail('detail.json').samples, 'cmdb_ingestion_task_duration_seconds', { task_id: taskId })).toBe(seconds);
  });

  it('labels task info with operator and image, "" when missing, hostile text unchanged', () => {
    const info = find(detail('detail.json').samples, 'cmdb_ingestion_task_info').map((s) => s.labels);
    expect(info).toEqual([
      { task_id: 'extract', operator: 'DockerOperator', image: 'cmdb/etl:1.2.3' },
      { task_id: 'transform', operator: 'DockerOperator', image: 'cmdb/etl:1.2.3' },
      { task_id: 'load', operator: 'DockerOperator', image: 'cmdb/etl:1.2.3' },
      { task_id: 'notify', operator: '', image: '' },
      { task_id: 'report', operator: 'PythonOperator', image: HOSTILE },
      { task_id: 'backwards', operator: 'DockerOperator', image: 'cmdb/etl:1.2.3' },
    ]);
  });

  it('keeps the first of a repeated task_id and logs the repeat at debug', () => {
    const { samples, ctx } = detail('detail.json');
    expect(find(samples, 'cmdb_ingestion_task_info', { task_id: 'extract' })).toHaveLength(1);
    expect(valueOf(samples, 'cmdb_ingestion_task_duration_seconds', { task_id: 'extract' })).toBe(300.5);
    expect(ctx.debugCalls.filter((c) => c.message.includes('repeated'))).toHaveLength(1);
    expect(ctx.debugCalls.map((c) => c.fields?.task_id)).toEqual(['extract', 'report', 'backwards']);
  });

  it('remembers task states across polls and forgets tasks that vanished', () => {
    const states = new StateMemory();
    detail('detail.json', context({ states }));
    const second = detail('detail-second-poll.json', context({ states })).samples;
    expect(stateSet(second, 'cmdb_ingestion_task_status', { task_id: 'extract' }, 'status')).toEqual({ success: 0, failed: 0, running: 1 });
    expect(find(second, 'cmdb_ingestion_task_status', { task_id: 'notify' })).toEqual([]);
    collect(collectIngestionDetail, null, context({ states }));
    const again = detail('detail.json', context({ states })).samples;
    expect(stateSet(again, 'cmdb_ingestion_task_status', { task_id: 'notify' }, 'status')).toEqual({ success: 0, failed: 0, running: 0, upstream_failed: 1 });
    const states3 = new StateMemory();
    detail('detail.json', context({ states: states3 }));
    const notifyAgain = collect(
      collectIngestionDetail,
      { id: 'r', value: [{ task_id: 'notify', status: 'success' }] },
      context({ states: states3 }),
    );
    expect(stateSet(notifyAgain, 'cmdb_ingestion_task_status', { task_id: 'notify' }, 'status')).toEqual({ success: 1, failed: 0, running: 0, upstream_failed: 0 });
  });

  it('never exports docker_cmd: the secrets planted in it stay out of samples and debug lines', () => {
    const planted = PLANTED_SECRETS.filter((secret) => fixtureText('ingestion/detail.json').includes(secret));
    expect(planted.length).toBeGreaterThanOrEqual(2);
    const { samples, ctx } = detail('detail.json');
    for (const secret of planted) expect(JSON.stringify(samples) + JSON.stringify(ctx.debugCalls)).not.toContain(secret);
  });
});

describe('ingestion runs: queued and any-case statuses', () => {
  it.each([
    ['queued', 1],
    ['QUEUED', 1],
    ['Running', 1],
    ['success', 0],
  ])('a newest run with status %j makes cmdb_ingestion_run_in_progress %d', (status, expected) => {
    const runs = validated(IngestionRunListSchema, {
      data_ingestion_runs: [
        { id: 'scheduled__2026-07-28T01:05:00+00:00', run_type: 'scheduled', status, start_date: '2026-07-29T01:05:03.412+00:00', end_date: null },
        { id: 'scheduled__2026-07-27T01:05:00+00:00', run_type: 'scheduled', status: 'SUCCESS', start_date: '2026-07-28T01:05:02+00:00', end_date: '2026-07-28T09:47:30+00:00' },
      ],
    }).data_ingestion_runs;
    const samples = collect(collectIngestionRuns, runs, context());
    expect(valueOf(samples, 'cmdb_ingestion_run_in_progress')).toBe(expected);
    // SUCCESS in capitals is still the success the alerts look for.
    if (expected === 1) expect(valueOf(samples, 'cmdb_ingestion_last_success_timestamp_seconds')).toBe(iso('2026-07-28T09:47:30Z'));
  });
});
