import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS, PATHS, pathSegment } from '../../src/api/endpoints.js';
import { MetricsRecordSchema, validate } from '../../src/api/schemas.js';
import type { SimulatorSize } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FIXED_NOW, ask, fetchToken, get, rawGet, sim, spellings } from './helpers.js';
import { SCHEMAS } from './schemas.js';


const TINY: SimulatorSize = {
  connectors: 1,
  profilesPerConnector: 1,
  runsPerConnector: 1,
  actions: 1,
  jobsPerAction: 1,
  ingestionRuns: 1,
  tasksPerRun: 1,
  trackedAssets: 1,
  trackedUsers: 1,
  changesPerRecord: 1,
  assetRecords: 1,
  userRecords: 1,
};
const LARGE: SimulatorSize = {
  connectors: 400,
  profilesPerConnector: 3,
  runsPerConnector: 5,
  actions: 60,
  jobsPerAction: 40,
  ingestionRuns: 50,
  tasksPerRun: 20,
  trackedAssets: 30,
  trackedUsers: 30,
  changesPerRecord: 40,
  assetRecords: 5000,
  userRecords: 2000,
};

const SIZES: Array<[string, Partial<SimulatorSize>]> = [
  ['tiny', TINY],
  ['default', {}],
  ['large', LARGE],
];

describe.each(SIZES)('every endpoint at %s size', (_name, size) => {
  // One simulator per size: building the large dataset once keeps the suite quick.
  let s: SimulatorServer;
  let token: string;
  beforeAll(async () => {
    s = await startSimulator({ now: () => FIXED_NOW, size });
    token = await fetchToken(s);
  });
  afterAll(() => s.close());

  const cases = DATA_ENDPOINTS.flatMap((endpoint) =>
    PATHS[endpoint]('x').map((_, spelling) => [endpoint, spelling] as const),
  );
  it.each(cases)('%s (spelling %i) answers 200 JSON that passes its schema', async (endpoint, spelling) => {
    const path = spellings(s, endpoint)[spelling] as string;
    const a = await ask(s, endpoint, path, token);
    expect(a.status, a.text.slice(0, 200)).toBe(200);
    expect(a.headers.get('content-type')).toBe('application/json');
    const result = validate(SCHEMAS[endpoint], a.body);
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true });
    expect(s.requests().at(-1)).toMatchObject({ endpoint, status: 200 });
  });
});

describe('ingestion run detail', () => {
  it('serves every listed run id, with `+` and `:` percent-encoded as the client sends them', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    for (const id of s.state().ingestionRunIds) {
      expect(id).toMatch(/^scheduled__\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
      const path = PATHS.data_ingestion_detail(id)[0] as string;
      expect(path).toContain('%2B00%3A00');
      const a = await get(s, path, token);
      expect(a.status).toBe(200);
      expect((a.body as { task_list: unknown[] }).task_list.length).toBe(5);
    }
  });

  it.each([
    ['an unknown run id', 'scheduled__2001-01-01T00:00:00+00:00'],
    ['an id holding a slash', 'scheduled__2025/03/10'],
    ['a dot-dot id', '..'],
  ])('answers 404 with a small JSON error for %s, routed as one segment', async (_name, id) => {
    const s = await sim();
    const token = await fetchToken(s);
    const path = PATHS.data_ingestion_detail(id)[0] as string;
    const a = await rawGet(s, path, token);
    expect(a.status).toBe(404);
    expect(JSON.parse(a.text)).toMatchObject({ code: 404 });
    expect(s.requests().at(-1)).toMatchObject({ endpoint: 'data_ingestion_detail', rawPath: path });
  });
});

describe('action jobs', () => {
  it('serves the jobs of every Action, numeric ids included', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    for (const id of s.state().actionIds) {
      const a = await get(s, `${PATHS.action_jobs(id)[0]}`, token);
      expect(a.status).toBe(200);
      expect(Array.isArray(a.body)).toBe(true);
    }
  });

  it('answers 404 for an unknown Action id', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const a = await get(s, PATHS.action_jobs('no-such-action')[0] as string, token);
    expect(a.status).toBe(404);
    expect(a.body).toMatchObject({ code: 404 });
  });
});

describe('change history', () => {
  it.each(['asset_change', 'user_change'] as const)('%s serves every tracked name under both spellings, query-decoded', async (endpoint) => {
    const s = await sim({ size: { trackedAssets: 4, trackedUsers: 3 } });
    const token = await fetchToken(s);
    const state = s.state();
    const names = endpoint === 'asset_change' ? state.trackedAssets : state.trackedUsers;
    for (const name of names) {
      for (const path of PATHS[endpoint]()) {
        const a = await get(s, `${path}?id=${encodeURIComponent(name)}`, token);
        expect(a.status).toBe(200);
        const entries = a.body as Array<{ id: string; type: string }>;
        expect(entries.length).toBe(6);
        expect(new Set(entries.map((e) => e.id))).toEqual(new Set([name]));
        expect(new Set(entries.map((e) => e.type))).toEqual(new Set([endpoint === 'asset_change' ? 'Asset' : 'User']));
      }
    }
  });

  it('tracks names with `&`, with a space and with non-ASCII characters', async () => {
    const s = await sim();
    const { trackedAssets, trackedUsers } = s.state();
    const names = [...trackedAssets, ...trackedUsers];
    expect(names.some((n) => n.includes('&'))).toBe(true);
    expect(names.some((n) => n.includes(' '))).toBe(true);
    expect(names.some((n) => [...n].some((c) => c.charCodeAt(0) > 127))).toBe(true);
  });

  it.each([
    ['an unknown name', '?id=nobody', 404],
    ['a name cut short at its `&` (sent unencoded)', '?id=R&D-LAPTOP-0042', 404],
    ['no id', '', 400],
  ])('answers %s with %i', async (_name, query, status) => {
    const s = await sim();
    const token = await fetchToken(s);
    const a = await get(s, `${PATHS.asset_change()[0]}${query}`, token);
    expect(a.status).toBe(status);
  });
});

describe('metrics record for a day', () => {
  it('returns the record of the requested past day, with that day in `date`', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const a = await get(s, `${PATHS.metrics_data()[0]}?date=2025-02-01`, token);
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ date: '2025-02-01' });
    expect(validate(MetricsRecordSchema, a.body).ok).toBe(true);
  });

  it('returns the current record for today and without a date', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const today = await get(s, `${PATHS.metrics_data()[0]}?date=2025-03-10`, token);
    const plain = await get(s, PATHS.metrics_data()[0] as string, token);
    expect(today.body).toEqual(plain.body);
    expect(plain.body).toMatchObject({ date: '2025-03-10' });
  });

  it.each(['2025-3-1', '2025-02-30', 'yesterday'])('answers 400 to the malformed date %s', async (date) => {
    const s = await sim();
    const token = await fetchToken(s);
    const a = await get(s, `${PATHS.metrics_data()[0]}?date=${date}`, token);
    expect(a.status).toBe(400);
  });
});

describe('unknown paths', () => {
  it('never serves GET /CMDB/v2/system/data-ingestion/run: 404, recorded with no endpoint', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const runsBefore = s.state().ingestionRunIds;
    const a = await get(s, '/CMDB/v2/system/data-ingestion/run', token);
    expect(a.status).toBe(404);
    expect(s.requests().at(-1)).toMatchObject({ rawPath: '/CMDB/v2/system/data-ingestion/run', endpoint: null, status: 404 });
    expect(s.state().ingestionRunIds).toEqual(runsBefore);
  });

  it.each([
    '/CMDB/v2/system/metrics/license/',
    '/CMDB/v2/system/metrics/details/x',
    '/CMDB/v2/system/metrics/data-ingestion/detail',
    '/cmdb/v2/system/metrics/license',
    '/',
  ])('answers 404 to %s', async (path) => {
    const s = await sim();
    const token = await fetchToken(s);
    expect((await get(s, path, token)).status).toBe(404);
  });

  it('answers 400 to a path with a broken percent escape', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    expect((await get(s, `${PATHS.action_jobs('x')[0]}%E0%A4%A`, token)).status).toBe(400);
  });

  it('records raw path and raw query with their encoding intact', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const id = 'a/b c';
    const path = `/CMDB/v2/system/metrics/action-jobs/${pathSegment(id)}`;
    await get(s, `${path}?x=%2C&y=1`, token);
    expect(s.requests().at(-1)).toMatchObject({
      method: 'GET',
      rawPath: '/CMDB/v2/system/metrics/action-jobs/a%2Fb%20c',
      rawQuery: 'x=%2C&y=1',
      endpoint: 'action_jobs',
      status: 404,
    });
    expect(s.requests().at(-1)?.headers.authorization).toBe(`Bearer ${token}`);
  });
});
