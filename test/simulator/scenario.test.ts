import { describe, expect, it } from 'vitest';
import { PATHS } from '../../src/api/endpoints.js';
import { ConfigError } from '../../src/errors.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { slotOf } from '../../src/simulator/data/connector-row.js';
import type { ActionRow, ConnectorRow, IngestionRunRow, IngestionTaskRow } from '../../src/simulator/data/types.js';
import { waitFor } from '../helpers/wait.js';
import { FIXED_NOW, fetchToken, get, sim } from './helpers.js';

async function body<T>(s: SimulatorServer, path: string): Promise<T> {
  const a = await get(s, path, await fetchToken(s));
  expect(a.status, a.text).toBe(200);
  return a.body as T;
}

const allRuns = async (s: SimulatorServer) =>
  (await body<{ content: ConnectorRow[] }>(s, `${PATHS.connector()[0]}?size=5000`)).content;
const ingestionRuns = async (s: SimulatorServer) =>
  (await body<{ data_ingestion_runs: IngestionRunRow[] }>(s, PATHS.data_ingestion()[0] as string)).data_ingestion_runs;
const newestRun = (runs: IngestionRunRow[]) => [...runs].sort((a, b) => a.start_date.localeCompare(b.start_date)).at(-1) as IngestionRunRow;
const nextRunAt = async (s: SimulatorServer) =>
  (await body<{ next_run_at: string }>(s, PATHS.data_ingestion_next()[0] as string)).next_run_at;
const actions = async (s: SimulatorServer) => (await body<{ actions: ActionRow[] }>(s, PATHS.actions()[0] as string)).actions;
const jobs = async (s: SimulatorServer, id: string) =>
  body<Array<{ action_run_date: string; action_status: string }>>(s, PATHS.action_jobs(id)[0] as string);

/** Newest run per profile of one connector. */
function newestPerProfile(rows: ConnectorRow[], bridge: string): ConnectorRow[] {
  const byProfile = new Map<string, ConnectorRow>();
  for (const row of rows.filter((r) => r.bridge_name === bridge)) {
    const key = JSON.stringify(typeof row.profile === 'object' && row.profile ? row.profile.profile_name : row.profile);
    const seen = byProfile.get(key);
    if (!seen || seen._time < row._time) byProfile.set(key, row);
  }
  return [...byProfile.values()];
}

describe('connector controls', () => {
  it('runConnector appends a newest run with that status for every profile, dropping the oldest', async () => {
    const s = await sim();
    const before = await allRuns(s);
    const bridge = 'crowdstrike_falcon';
    s.scenario.runConnector(bridge, 'Error');
    const after = await allRuns(s);
    expect(after.length).toBe(before.length);
    const newest = newestPerProfile(after, bridge);
    expect(newest.length).toBe(2);
    expect(newest.map((r) => r.status)).toEqual(['Error', 'Error']);
    s.scenario.runConnector(bridge, 'Success');
    expect(newestPerProfile(await allRuns(s), bridge).map((r) => r.status)).toEqual(['Success', 'Success']);
  });

  it('runConnector with holdSeconds keeps the connector\'s own later runs at that status until the hold ends', async () => {
    const s = await sim();
    const spec = [...s.dataset.connectors.values()].find((c) => c.usualStatus === 'Success' && c.profileKind !== 'merger');
    if (!spec) throw new Error('the simulator has no connector whose usual status is Success');
    const periodS = spec.periodMs / 1000;
    const statuses = async () => newestPerProfile(await allRuns(s), spec.bridgeName).map((r) => r.status);
    // Without a hold the connector's next own run heals it (the demo's alert only ever reached pending).
    s.scenario.runConnector(spec.bridgeName, 'Error');
    s.scenario.advance(periodS + 1);
    expect(await statuses()).not.toContain('Error');
    s.scenario.runConnector(spec.bridgeName, 'Error', 3 * periodS);
    s.scenario.advance(periodS + 1);
    expect(await statuses()).toEqual(spec.profiles.map(() => 'Error'));
    s.scenario.advance(periodS + 1);
    expect(await statuses()).toEqual(spec.profiles.map(() => 'Error'));
    // After the hold, its runs return to the usual status.
    s.scenario.advance(2 * periodS + 1);
    expect(spec.held).toBeUndefined();
    expect(await statuses()).not.toContain('Error');
  });

  it('addConnector and removeConnector change the list at once', async () => {
    const s = await sim();
    s.scenario.addConnector('brand_new_source', 'Warning');
    let rows = await allRuns(s);
    expect(newestPerProfile(rows, 'brand_new_source').map((r) => r.status)).toEqual(['Warning', 'Warning']);
    s.scenario.removeConnector('crowdstrike_falcon');
    rows = await allRuns(s);
    expect(rows.some((r) => r.bridge_name === 'crowdstrike_falcon')).toBe(false);
    expect(s.state().connectors.map((c) => c.bridgeName)).not.toContain('crowdstrike_falcon');
  });

  it.each<[string, (s: SimulatorServer) => void]>([
    ['runConnector on an unknown connector', (s) => s.scenario.runConnector('nope', 'Error')],
    ['runConnector with an empty status', (s) => s.scenario.runConnector('crowdstrike_falcon', '')],
    ['runConnector with a negative hold', (s) => s.scenario.runConnector('crowdstrike_falcon', 'Error', -1)],
    ['addConnector with a taken name', (s) => s.scenario.addConnector('crowdstrike_falcon')],
    ['removeConnector on an unknown connector', (s) => s.scenario.removeConnector('nope')],
    ['runActionJob on an unknown Action', (s) => s.scenario.runActionJob('nope', 'FAILED')],
    ['addAction with a taken id', (s) => s.scenario.addAction('4100')],
    ['setLicenseExpiry with a bad day', (s) => s.scenario.setLicenseExpiry('2025-02-30')],
    ['setAssetCount with a negative count', (s) => s.scenario.setAssetCount(-1)],
    ['advance by a negative time', (s) => s.scenario.advance(-5)],
  ])('rejects %s with a ConfigError and changes nothing', async (_name, call) => {
    const s = await sim();
    const before = JSON.stringify(s.state());
    expect(() => call(s)).toThrow(ConfigError);
    expect(JSON.stringify(s.state())).toBe(before);
  });
});

describe('ingestion controls', () => {
  it('runIngestion("running") starts a newest run without end_date and turns next_run_at into a text', async () => {
    const s = await sim();
    s.scenario.finishIngestion('success');
    expect(await nextRunAt(s)).toMatch(/^\d{4}-\d\d-\d\dT/);
    s.scenario.runIngestion('running');
    const newest = newestRun(await ingestionRuns(s));
    expect(newest.status).toBe('running');
    expect('end_date' in newest).toBe(false);
    expect(await nextRunAt(s)).toBe('Data ingestion is in progress');
  });

  it.each(['success', 'failed'] as const)('runIngestion("%s") adds a finished newest run, ending the one in progress', async (outcome) => {
    const s = await sim();
    const before = await ingestionRuns(s);
    s.scenario.runIngestion(outcome);
    const runs = await ingestionRuns(s);
    expect(runs.length).toBe(before.length);
    const newest = newestRun(runs);
    expect(newest.status).toBe(outcome);
    expect(newest.end_date).toBeDefined();
    expect(runs.filter((r) => r.status === 'running')).toEqual([]);
  });

  it('gives runs and jobs added at the same fixed clock distinct ids, the last one newest', async () => {
    const s = await sim();
    s.scenario.runIngestion('success');
    s.scenario.runIngestion('failed');
    s.scenario.runIngestion('success');
    const runs = await ingestionRuns(s);
    expect(new Set(runs.map((r) => r.id)).size).toBe(runs.length);
    expect(newestRun(runs).status).toBe('success');
    for (const action of (await actions(s)).filter((a) => a.scheduleType === 'AFTER_DATA_INGESTION')) {
      const list = await body<Array<{ id: string }>>(s, PATHS.action_jobs(String(action.actionId))[0] as string);
      expect(new Set(list.map((j) => j.id)).size).toBe(list.length);
    }
  });

  it('finishIngestion("failed") fails the running run; its detail shows the failed task and the skipped rest', async () => {
    const s = await sim();
    const running = s.state().runningIngestionRunId as string;
    s.scenario.finishIngestion('failed');
    const run = (await ingestionRuns(s)).find((r) => r.id === running) as IngestionRunRow;
    expect(run.status).toBe('failed');
    expect(run.end_date).toBeDefined();
    const { task_list } = await body<{ task_list: IngestionTaskRow[] }>(s, PATHS.data_ingestion_detail(running)[0] as string);
    const statuses = task_list.map((t) => t.status).join(' ');
    expect(statuses).toMatch(/^(success )*failed( upstream_failed)*$/);
  });

  it('finishIngestion does nothing when no run is in progress', async () => {
    const s = await sim();
    s.scenario.finishIngestion('success');
    const before = await ingestionRuns(s);
    s.scenario.finishIngestion('failed');
    expect(await ingestionRuns(s)).toEqual(before);
  });

  it('a successful ingestion run triggers the AFTER_DATA_INGESTION Actions', async () => {
    const s = await sim();
    const after = (await actions(s)).filter((a) => a.scheduleType === 'AFTER_DATA_INGESTION');
    expect(after.length).toBeGreaterThan(0);
    s.scenario.advance(3600);
    s.scenario.runIngestion('success');
    for (const action of after) {
      const now = (await actions(s)).find((a) => a.actionId === action.actionId) as ActionRow;
      expect(Date.parse(now.lastRunAt)).toBeGreaterThan(Date.parse(action.lastRunAt));
    }
  });
});

describe('Action controls', () => {
  it('runActionJob appends a newest job with that status and updates lastRunAt', async () => {
    const s = await sim();
    const id = s.state().actionIds[0] as string;
    s.scenario.advance(1);
    s.scenario.runActionJob(id, 'FAILED');
    const list = await jobs(s, id);
    const newest = [...list].sort((a, b) => a.action_run_date.localeCompare(b.action_run_date)).at(-1);
    expect(newest?.action_status).toBe('FAILED');
    const action = (await actions(s)).find((a) => String(a.actionId) === id) as ActionRow;
    expect(action.lastRunAt.slice(0, 19).replace('T', ' ')).toBe(newest?.action_run_date);
  });

  it('addAction and removeAction change the list and the job endpoint at once', async () => {
    const s = await sim();
    s.scenario.addAction('act-new', 'Brand new');
    expect((await actions(s)).some((a) => a.actionId === 'act-new' && a.actionName === 'Brand new')).toBe(true);
    expect(await jobs(s, 'act-new')).toEqual([]);
    s.scenario.removeAction('act-new');
    expect((await actions(s)).some((a) => a.actionId === 'act-new')).toBe(false);
    expect((await get(s, PATHS.action_jobs('act-new')[0] as string, await fetchToken(s))).status).toBe(404);
  });
});

describe('inventory and license controls', () => {
  it('setAssetCount and setUserCount change the counts, not the 30-day averages', async () => {
    const s = await sim();
    const before = await body<Record<string, number>>(s, PATHS.metrics_data()[0] as string);
    s.scenario.setAssetCount(10);
    s.scenario.setUserCount(3);
    const after = await body<Record<string, number>>(s, PATHS.metrics_data()[0] as string);
    expect(after).toMatchObject({ assetCount: 10, userCount: 3 });
    expect(after.avg30DaysAssetCount).toBe(before.avg30DaysAssetCount);
    expect(after.avg30DaysUserCount).toBe(before.avg30DaysUserCount);
  });

  it('setLicenseExpiry changes expireDate', async () => {
    const s = await sim();
    s.scenario.setLicenseExpiry('2025-03-20');
    expect(await body(s, PATHS.license()[0] as string)).toMatchObject({ expireDate: '2025-03-20' });
  });
});

describe('advance', () => {
  it('moves runs along: the running run finishes, new runs start, connectors and Actions run, counts drift', async () => {
    const s = await sim();
    const before = s.state();
    const rowsBefore = await allRuns(s);
    s.scenario.advance(20 * 60);
    const after = s.state();
    expect(after.now).toBe(new Date(FIXED_NOW + 20 * 60_000).toISOString());
    expect(after.ingestionRunIds).not.toEqual(before.ingestionRunIds);
    expect(after.ingestionRunIds.length).toBe(before.ingestionRunIds.length);
    const oldRunning = (await ingestionRuns(s)).find((r) => r.id === before.runningIngestionRunId);
    expect(oldRunning === undefined || oldRunning.status !== 'running').toBe(true);
    const rowsAfter = await allRuns(s);
    expect(Math.max(...rowsAfter.map((r) => r._time))).toBeGreaterThan(Math.max(...rowsBefore.map((r) => r._time)));
    expect(rowsAfter.length).toBe(rowsBefore.length);
    expect(after.assetCount).not.toBe(before.assetCount);
    const batch = (await actions(s)).filter((a) => a.scheduleType === 'SCHEDULE_BATCH_DATA');
    for (const a of batch) expect(Date.parse(a.nextRunAt)).toBeGreaterThan(FIXED_NOW + 20 * 60_000);
  });

  it('gives the same data whether time moves in one step or in many', async () => {
    const one = await sim();
    const many = await sim();
    one.scenario.advance(3 * 3600);
    for (const step of [7, 293, 1000, 61, 2439, 3000, 4000]) many.scenario.advance(step);
    for (const path of [`${PATHS.connector()[0]}?size=5000`, PATHS.data_ingestion()[0], PATHS.metrics_data()[0], PATHS.actions()[0]] as string[]) {
      const a = (await get(many, path, await fetchToken(many))).text;
      const b = (await get(one, path, await fetchToken(one))).text;
      // Not toBe: a failure would print two bodies of many kilobytes.
      expect(a === b, `${path} differs`).toBe(true);
    }
  });

  it('stays cheap across a long jump at a large size', async () => {
    const s = await sim({ size: { connectors: 2000, runsPerConnector: 5, actions: 200, jobsPerAction: 20 } });
    const before = s.state().counts;
    s.scenario.advance(30 * 86_400);
    expect(s.state().counts).toMatchObject({ connectorRuns: before.connectorRuns, actionJobs: before.actionJobs, ingestionRuns: before.ingestionRuns });
  });
});

describe('live mode', () => {
  it('moves time from its own timer without any advance() call', async () => {
    let clock = FIXED_NOW;
    const s = await sim({ live: true, now: () => clock });
    const before = s.state().ingestionRunIds;
    clock += 15 * 60_000;
    // Until its timer has run (bounded against a hang, not a measure of speed).
    await waitFor('the live simulator moved its time', () => s.state().ingestionRunIds.join() !== before.join());
  });

  it('stands still without live mode', async () => {
    let clock = FIXED_NOW;
    const s = await sim({ now: () => clock });
    // A live one on the same clock: once its timer has moved it, a timer of the other would have too.
    const live = await sim({ live: true, now: () => clock });
    const before = s.state().ingestionRunIds;
    const liveBefore = live.state().ingestionRunIds;
    clock += 15 * 60_000;
    await waitFor('the live simulator beside it moved its time', () => live.state().ingestionRunIds.join() !== liveBefore.join());
    expect(s.state().ingestionRunIds).toEqual(before);
  });
});

describe('connectorPeriodSeconds', () => {
  // A profile's runs, as the history keeps them (a run may be filed under another profile name).
  const keyOf = (r: ConnectorRow) => slotOf(r) ?? r.bridge_name;
  const timesByKey = (rows: readonly ConnectorRow[]) => {
    const byKey = new Map<string, number[]>();
    for (const r of rows) byKey.set(keyOf(r), [...(byKey.get(keyOf(r)) ?? []), r._time].sort((a, b) => a - b));
    return byKey;
  };
  const span = (rows: ConnectorRow[]) => Math.max(...rows.map((r) => r._time)) - Math.min(...rows.map((r) => r._time));

  it('runs every connector once per period, so the history spans days as on the real service, and a day adds one run per key', async () => {
    const size = { connectors: 20, runsPerConnector: 3 };
    const demo = await allRuns(await sim({ size }));
    expect(span(demo)).toBeLessThan(3600);
    const s = await sim({ size, connectorPeriodSeconds: 86_400 });
    const rows = await allRuns(s);
    expect(rows).toHaveLength(demo.length);
    expect(span(rows)).toBeGreaterThan(2 * 86_400);
    expect(Math.max(...rows.map((r) => r._time))).toBeLessThanOrEqual(FIXED_NOW / 1000);
    const before = timesByKey(s.dataset.history.all());
    expect(before.size).toBe(rows.length / 3);
    for (const times of before.values()) {
      expect(times).toHaveLength(3);
      // A run lands up to 5 s before its slot.
      for (let i = 1; i < times.length; i++) expect(Math.abs((times[i] as number) - (times[i - 1] as number) - 86_400)).toBeLessThanOrEqual(5);
    }
    s.scenario.advance(86_400);
    expect(await allRuns(s)).toHaveLength(rows.length);
    const after = timesByKey(s.dataset.history.all());
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [key, times] of after) {
      const old = before.get(key) as number[];
      expect(times.slice(0, 2)).toEqual(old.slice(1));
      expect(Math.abs((times[2] as number) - (old[2] as number) - 86_400)).toBeLessThanOrEqual(5);
    }
  });

  it.each([59, 1.5, 30 * 86_400 + 1])('rejects %s with a ConfigError naming the option', async (seconds) => {
    const err = await sim({ connectorPeriodSeconds: seconds }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([expect.objectContaining({ path: 'connectorPeriodSeconds' })]);
  });
});
