import { describe, expect, it } from 'vitest';
import { PATHS } from '../../src/api/endpoints.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import type {
  ActionJobRow,
  ActionRow,
  ChangeEntryRow,
  ConnectorRow,
  IngestionRunRow,
  IngestionTaskRow,
  LicenseRow,
  MetricsRow,
} from '../../src/simulator/data/types.js';
import { fetchToken, get, sim } from './helpers.js';

async function read<T>(s: SimulatorServer, path: string): Promise<T> {
  const a = await get(s, path, await fetchToken(s));
  expect(a.status, path).toBe(200);
  return a.body as T;
}

const connectorRows = async (s: SimulatorServer) => (await read<{ content: ConnectorRow[] }>(s, `${PATHS.connector()[0]}?size=5000`)).content;
const HOSTILE = (t: string) => t.includes('"') && t.includes('\\') && t.includes('\n') && [...t].some((c) => c.charCodeAt(0) > 127);

describe('connector runs', () => {
  it('show every status kind across connectors, most of them healthy', async () => {
    const s = await sim();
    const rows = await connectorRows(s);
    const connectorRuns = rows.filter((r) => r.platform !== 'action');
    expect(new Set(connectorRuns.map((r) => r.status))).toEqual(new Set(['Success', 'SUCCESS', 'Warning', 'Warning&Error', 'Error']));
    // Action rows say SUCCESS or FAILED, as the Action job list does.
    expect(new Set(rows.filter((r) => r.platform === 'action').map((r) => r.status))).toEqual(new Set(['SUCCESS', 'FAILED']));
    const healthy = rows.filter((r) => r.status.toLowerCase() === 'success').length;
    expect(healthy / rows.length).toBeGreaterThan(0.5);
  });

  it('send profile as an object, a plain string, and null for merger rows', async () => {
    const rows = await connectorRows(await sim());
    expect(rows.some((r) => typeof r.profile === 'string')).toBe(true);
    expect(rows.some((r) => r.profile === null && r.platform === 'ML-ENGINE')).toBe(true);
    const objects = rows.flatMap((r) => (r.profile && typeof r.profile === 'object' ? [r.profile] : []));
    expect(objects.length).toBeGreaterThan(rows.length / 2);
    for (const p of objects) {
      expect(typeof p.mongo_id.timestamp).toBe('number');
      expect(p.mongo_id.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it('give an error run an error_msg, empty actual/output lists and no output from some input', async () => {
    const rows = (await connectorRows(await sim())).filter((r) => r.status === 'Error');
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      expect(r).toMatchObject({ actual_input_fields: [], output_fields: [], output_records: 0 });
      expect(r.input_records).toBeGreaterThan(0);
      if (r.profile && typeof r.profile === 'object') expect(r.profile.error_msg).toEqual(expect.any(String));
    }
  });

  it('carry times in both _utc offset forms, with milliseconds, matching _time', async () => {
    const rows = await connectorRows(await sim());
    expect(rows.some((r) => r._utc.endsWith('+00:00'))).toBe(true);
    expect(rows.some((r) => r._utc.endsWith('+0000'))).toBe(true);
    for (const r of rows) {
      expect(r._utc).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(\+00:00|\+0000)$/);
      expect(Math.floor(Date.parse(r._utc.replace('+0000', '+00:00')) / 1000)).toBe(r._time);
      if (r.start_time !== undefined && r.end_time !== undefined && r.duration_minutes !== undefined) {
        expect(r.end_time - r.start_time).toBeCloseTo(r.duration_minutes * 60, -1);
      }
    }
    expect(rows.some((r) => r.duration_minutes !== undefined && !Number.isInteger(r.duration_minutes))).toBe(true);
  });

  it('are shaped like the real service: ordinary runs with _time/_utc only, mergers with end_time and dag_run_id, action rows, Default profile rows', async () => {
    const rows = await connectorRows(await sim());
    const ordinary = rows.filter((r) => r.platform !== 'ML-ENGINE' && r.platform !== 'action');
    expect(ordinary.filter((r) => r.start_time === undefined && r.end_time === undefined).length).toBeGreaterThan(ordinary.length / 2);
    const mergers = rows.filter((r) => r.platform === 'ML-ENGINE');
    expect(mergers.length).toBeGreaterThan(0);
    for (const m of mergers) expect(['Lucidum Asset Merger', 'Lucidum User Merger']).toContain(m.bridge_name);
    for (const m of mergers) {
      expect(m.profile).toBeNull();
      expect(m.end_time).toEqual(expect.any(Number));
      expect(m.dag_run_id).toMatch(/^scheduled__/);
      expect(m.start_time).toBeUndefined();
    }
    const actions = rows.filter((r) => r.platform === 'action');
    expect(actions.length).toBeGreaterThan(0);
    for (const a of actions) expect(typeof a.profile).toBe('string');
    expect(rows.some((r) => r.profile === 'Default profile')).toBe(true);
  });

  it('keep several runs per connector profile with differing times', async () => {
    const all = await connectorRows(await sim());
    // A connector whose runs are partly filed under "Default profile" splits its runs over two keys.
    const split = new Set(all.filter((r) => r.profile === 'Default profile').map((r) => r.bridge_name));
    const rows = all.filter((r) => !split.has(r.bridge_name));
    expect(split.size).toBeGreaterThan(0);
    const byKey = new Map<string, number[]>();
    for (const r of rows) {
      const key = `${r.bridge_name}|${JSON.stringify(r.profile && typeof r.profile === 'object' ? r.profile.profile_name : r.profile)}`;
      byKey.set(key, [...(byKey.get(key) ?? []), r._time]);
    }
    for (const times of byKey.values()) {
      expect(times).toHaveLength(3);
      expect(new Set(times).size).toBe(3);
    }
  });

  it('send event messages as level-keyed objects, and as a plain string for some rows', async () => {
    const rows = await connectorRows(await sim());
    expect(rows.some((r) => typeof r.event_messages === 'string')).toBe(true);
    const levels = new Set(rows.flatMap((r) => (Array.isArray(r.event_messages) ? r.event_messages.flatMap((m) => Object.keys(m)) : [])));
    expect(levels).toEqual(new Set(['INFO', 'WARNING', 'ERROR']));
  });

  it('serialize source_settings as a JSON document with the documented keys', async () => {
    for (const r of await connectorRows(await sim())) {
      expect(JSON.parse(r.source_settings)).toMatchObject({
        platform: r.platform,
        type: expect.any(String),
        technology: expect.any(String),
        display_name: r.display_name,
        output: expect.any(String),
      });
    }
  });

  it('include connectors that miss some expected fields, and several platforms', async () => {
    const rows = await connectorRows(await sim());
    expect(rows.some((r) => r.status !== 'Error' && (r.actual_input_fields?.length ?? 0) < (r.expected_input_fields?.length ?? 0))).toBe(true);
    expect(new Set(rows.map((r) => r.platform)).size).toBeGreaterThanOrEqual(4);
  });

  it('include hostile but legal display and profile names', async () => {
    const rows = await connectorRows(await sim());
    expect(rows.some((r) => HOSTILE(r.display_name))).toBe(true);
    expect(rows.some((r) => r.profile && typeof r.profile === 'object' && HOSTILE(r.profile.display_name))).toBe(true);
    expect(rows.some((r) => r.profile && typeof r.profile === 'object' && r.profile.profile_name.includes('"'))).toBe(true);
  });
});

describe('ingestion runs', () => {
  it('use scheduled__ ids with microsecond dates; the newest is running without an end_date', async () => {
    const s = await sim();
    const { data_ingestion_runs: runs } = await read<{ data_ingestion_runs: IngestionRunRow[] }>(s, PATHS.data_ingestion()[0] as string);
    for (const r of runs) {
      expect(r.id).toMatch(/^scheduled__\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
      expect(r.run_type).toBe('scheduled');
      expect(r.start_date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    }
    const newest = [...runs].sort((a, b) => a.start_date.localeCompare(b.start_date)).at(-1) as IngestionRunRow;
    expect(newest.status).toBe('running');
    expect(Object.keys(newest)).not.toContain('end_date');
    for (const r of runs.filter((x) => x !== newest)) expect(r.end_date).toMatch(/\.\d{6}\+00:00$/);
    const next = await read<Record<string, string>>(s, PATHS.data_ingestion_next()[0] as string);
    expect(next).toEqual({ next_run_at: 'Data ingestion is in progress', schedule_interval_value: '*/5 * * * *', schedule_interval_type: 'CronExpression' });
  });

  it('give next_run_at as a timestamp once nothing runs', async () => {
    const s = await sim();
    s.scenario.finishIngestion('success');
    const next = await read<{ next_run_at: string }>(s, PATHS.data_ingestion_next()[0] as string);
    expect(next.next_run_at).toBe('2025-03-10T12:35:00+00:00');
  });

  it('list tasks of a running run as success…, one running without end_date, queued…', async () => {
    const s = await sim({ size: { tasksPerRun: 8 } });
    const running = s.state().runningIngestionRunId as string;
    const { task_list: tasks } = await read<{ task_list: IngestionTaskRow[] }>(s, PATHS.data_ingestion_detail(running)[0] as string);
    expect(tasks.map((t) => t.status).join(' ')).toMatch(/^(success )*running( queued)*$/);
    const runningTask = tasks.find((t) => t.status === 'running') as IngestionTaskRow;
    expect(runningTask.start_date).toBeDefined();
    expect('end_date' in runningTask).toBe(false);
    for (const t of tasks) {
      expect(t.operator).toBe('DockerOperator');
      expect(t.docker_image).toMatch(/^[\w/-]+:\d+\.\d+\.\d+$/);
      expect(t.docker_cmd.length).toBeGreaterThan(10);
    }
  });
});

describe('Actions and jobs', () => {
  it('use both schedule types with their nextRunAt and cron forms, a numeric id, status RUNNING', async () => {
    const s = await sim();
    const { actions } = await read<{ actions: ActionRow[] }>(s, PATHS.actions()[0] as string);
    const after = actions.filter((a) => a.scheduleType === 'AFTER_DATA_INGESTION');
    const batch = actions.filter((a) => a.scheduleType === 'SCHEDULE_BATCH_DATA');
    expect(after.length).toBeGreaterThan(0);
    expect(batch.length).toBeGreaterThan(0);
    for (const a of after) expect(a).toMatchObject({ nextRunAt: 'After Next Data Ingestion', scheduleCronExpression: '' });
    for (const a of batch) {
      expect(a.nextRunAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(a.scheduleCronExpression).not.toBe('');
    }
    expect(actions.some((a) => typeof a.actionId === 'number')).toBe(true);
    expect(new Set(actions.map((a) => a.status))).toEqual(new Set(['RUNNING']));
    expect(actions.some((a) => HOSTILE(a.actionName))).toBe(true);
  });

  it('list jobs unsorted with zone-less dates, mostly SUCCESS, FAILED ones with a message', async () => {
    const s = await sim();
    const all: ActionJobRow[] = [];
    let unsorted = false;
    for (const id of s.state().actionIds) {
      const jobs = await read<ActionJobRow[]>(s, PATHS.action_jobs(id)[0] as string);
      const dates = jobs.map((j) => j.action_run_date);
      if (dates.join() !== [...dates].sort().join() && dates.join() !== [...dates].sort().reverse().join()) unsorted = true;
      all.push(...jobs);
    }
    expect(unsorted).toBe(true);
    for (const j of all) {
      expect(j.action_run_date).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      expect(j.action_status_msg === null || typeof j.action_status_msg === 'string').toBe(true);
      if (j.action_status === 'FAILED') expect(j.action_status_msg).toEqual(expect.any(String));
    }
    const failed = all.filter((j) => j.action_status === 'FAILED').length;
    expect(failed).toBeGreaterThan(0);
    expect(all.filter((j) => j.action_status === 'SUCCESS').length).toBeGreaterThan(failed);
  });
});

describe('change history, license and counts', () => {
  it('lists change entries newest first, several per field, with string, number and list values', async () => {
    const s = await sim();
    const values: unknown[] = [];
    for (const name of s.state().trackedAssets) {
      const entries = await read<ChangeEntryRow[]>(s, `${PATHS.asset_change()[0]}?id=${encodeURIComponent(name)}`);
      const epochs = entries.map((e) => e.changeTimeEpoch);
      expect(epochs).toEqual([...epochs].sort((a, b) => b - a));
      const perField = new Map<string, number>();
      for (const e of entries) {
        perField.set(e.field, (perField.get(e.field) ?? 0) + 1);
        expect(e.changeTimeUTC).toBe(new Date(e.changeTimeEpoch * 1000).toISOString().replace('.000Z', 'Z'));
        values.push(e.oldValue, e.newValue);
      }
      expect(Math.max(...perField.values())).toBeGreaterThan(1);
    }
    expect(values.some((v) => typeof v === 'string')).toBe(true);
    expect(values.some((v) => typeof v === 'number')).toBe(true);
    expect(values.some((v) => Array.isArray(v))).toBe(true);
  });

  it('gives a FULL license expiring a year after the start, for a customer with a hostile name', async () => {
    const license = await read<LicenseRow>(await sim(), PATHS.license()[0] as string);
    expect(license).toMatchObject({ licenseType: 'FULL', expireDate: '2026-03-10' });
    expect(HOSTILE(license.customerName)).toBe(true);
  });

  it('keeps the 30-day averages close to the counts', async () => {
    const m = await read<MetricsRow>(await sim(), PATHS.metrics_data()[0] as string);
    expect(Math.abs(m.avg30DaysAssetCount - m.assetCount) / m.assetCount).toBeLessThan(0.05);
    expect(Math.abs(m.avg30DaysUserCount - m.userCount) / m.userCount).toBeLessThan(0.05);
  });
});
