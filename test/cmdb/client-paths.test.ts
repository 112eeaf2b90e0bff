/** Paths, spellings, encodings and paging against the simulator's request log. */
import { describe, expect, it } from 'vitest';
import { PATHS, TOKEN_PATH, DATA_ENDPOINTS } from '../../src/api/endpoints.js';
import { CmdbHttpError } from '../../src/errors.js';
import { makeClient, rejection } from './helpers/client.js';
import { dataPaths, requestsTo, sim, simStack, trackedAsset, trackedUser } from './helpers/sim.js';

const M = '/CMDB/v2/system/metrics';
const ASSET_META = '/CMDB/v2/data/metadata/cmdb/asset/change';
const ASSET_PLAIN = '/CMDB/v2/data/cmdb/asset/change';

describe('Action jobs', () => {
  it('reads a 404 as an Action without jobs (deleted meanwhile), not as a failure', async () => {
    const s = await sim();
    const { client, metrics } = makeClient(simStack(s));
    await expect(client.get('action_jobs', 'no-such-action')).resolves.toEqual([]);
    expect(dataPaths(s)).toEqual([`${M}/action-jobs/no-such-action`]);
    expect(await metrics.outcomes('action_jobs')).toEqual({ '404': 1 });
  });
});

describe('Action list spelling (/actions or /action)', () => {
  it('uses /actions when it answers and keeps asking it', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    await client.get('actions');
    await client.get('actions');
    expect(dataPaths(s)).toEqual([`${M}/actions`, `${M}/actions`]);
  });

  it('falls back to /action on a 404, remembers it, and logs the discovery', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'actions', status: 404, times: 1 });
    const { client, log } = makeClient(simStack(s));
    const first = await client.get('actions');
    const second = await client.get('actions');
    expect(first.length).toBeGreaterThan(0);
    expect(second).toEqual(first);
    expect(dataPaths(s)).toEqual([`${M}/actions`, `${M}/action`, `${M}/action`]);
    const info = log.lines().find((l) => l.msg === 'CMDB path spelling discovered');
    expect(info).toMatchObject({ level: 'info', endpoint: 'actions', path: `${M}/action` });
  });

  it('a 404 on both spellings is CmdbHttpError 404', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'actions', status: 404 });
    const { client } = makeClient(simStack(s));
    const err = await rejection(client.get('actions'));
    expect(err).toBeInstanceOf(CmdbHttpError);
    expect((err as CmdbHttpError).status).toBe(404);
    expect(dataPaths(s)).toEqual([`${M}/actions`, `${M}/action`]);
  });
});

describe('a 403 on the first spelling still tries the other one', () => {
  it('/actions refused with 403, /action answers: remembered, no failure', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'actions', path: `${M}/actions`, status: 403 });
    const { client } = makeClient(simStack(s));
    const first = await client.get('actions');
    await client.get('actions');
    expect(first.length).toBeGreaterThan(0);
    expect(dataPaths(s)).toEqual([`${M}/actions`, `${M}/action`, `${M}/action`]);
  });

  it('the change path with metadata refused with 403 falls back to the form without it', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'asset_change', path: ASSET_META, status: 403 });
    const { client } = makeClient(simStack(s));
    const entries = await client.get('asset_change', trackedAsset());
    expect(entries.length).toBeGreaterThan(0);
    expect(dataPaths(s)).toEqual([ASSET_META, ASSET_PLAIN]);
  });

  it('403 on the first spelling and 404 on the other is CmdbHttpError 403 (forbidden, not missing)', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'actions', path: `${M}/actions`, status: 403 });
    s.addFault({ endpoint: 'actions', path: `${M}/action`, status: 404 });
    const { client } = makeClient(simStack(s));
    const err = await rejection(client.get('actions'));
    expect(err).toBeInstanceOf(CmdbHttpError);
    expect((err as CmdbHttpError).status).toBe(403);
    expect(dataPaths(s)).toEqual([`${M}/actions`, `${M}/action`]);
  });

  it('once a spelling is remembered, its 403 is final (the other is not asked)', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    await client.get('actions');
    s.addFault({ endpoint: 'actions', status: 403 });
    const err = await rejection(client.get('actions'));
    expect((err as CmdbHttpError).status).toBe(403);
    expect(dataPaths(s)).toEqual([`${M}/actions`, `${M}/actions`]);
  });
});

describe('change-log spelling (with or without metadata)', () => {
  it('falls back to the form without metadata on a 404 and remembers it', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'asset_change', status: 404, times: 1 });
    const { client } = makeClient(simStack(s));
    const id = trackedAsset();
    const first = await client.get('asset_change', id);
    await client.get('asset_change', id);
    expect(first.length).toBeGreaterThan(0);
    expect(dataPaths(s)).toEqual([ASSET_META, ASSET_PLAIN, ASSET_PLAIN]);
  });

  it('once a spelling is remembered, its 404 means no change log: [] after one request', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    const id = trackedAsset();
    await client.get('asset_change', id);
    s.addFault({ endpoint: 'asset_change', status: 404 });
    s.clearRequests();
    await expect(client.get('asset_change', id)).resolves.toEqual([]);
    expect(dataPaths(s)).toEqual([ASSET_META]);
  });

  it('an id without a change log on the remembered spelling is [] after one request', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    await client.get('asset_change', trackedAsset());
    s.clearRequests();
    await expect(client.get('asset_change', 'no-such-asset')).resolves.toEqual([]);
    expect(dataPaths(s)).toEqual([ASSET_META]);
  });

  it('when every spelling answers 404 the result is [] and nothing is remembered', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'asset_change', status: 404 });
    const { client } = makeClient(simStack(s));
    await expect(client.get('asset_change', 'nobody')).resolves.toEqual([]);
    await expect(client.get('asset_change', 'nobody')).resolves.toEqual([]);
    expect(dataPaths(s)).toEqual([ASSET_META, ASSET_PLAIN, ASSET_META, ASSET_PLAIN]);
  });

  it('asset and user spellings are remembered separately', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'asset_change', status: 404, times: 1 });
    const { client } = makeClient(simStack(s));
    await client.get('asset_change', trackedAsset());
    await client.get('user_change', trackedUser());
    await client.get('user_change', trackedUser());
    const USER_META = '/CMDB/v2/data/metadata/cmdb/user/change';
    expect(dataPaths(s)).toEqual([ASSET_META, ASSET_PLAIN, USER_META, USER_META]);
  });
});

describe('query and path encoding', () => {
  it('percent-encodes a change id so & and space cannot cut it short', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    await client.get('asset_change', 'R&D laptop');
    expect(requestsTo(s, 'asset_change')[0]?.rawQuery).toBe('id=R%26D%20laptop');
  });

  it.each([
    ['a run id holding / and ..', 'scheduled__../../x/y', `${M}/data-ingestion/detail/scheduled__..%2F..%2Fx%2Fy`],
    ['a run id of only dots', '..', `${M}/data-ingestion/detail/%2E%2E`],
    ['a run id holding ? # %', 'a?b#c%d', `${M}/data-ingestion/detail/a%3Fb%23c%25d`],
  ])('sends %s as one encoded path segment', async (_n, runId, rawPath) => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    await client.get('data_ingestion_detail', runId).catch(() => undefined); // unknown run: 404
    const [rec] = s.requests().filter((r) => r.endpoint !== 'access_token');
    expect(rec?.rawPath).toBe(rawPath);
    expect(rec?.endpoint).toBe('data_ingestion_detail');
  });

  it('sends an Action id holding / as one encoded path segment', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    await client.get('action_jobs', 'a/../b').catch(() => undefined);
    expect(requestsTo(s, 'action_jobs')[0]?.rawPath).toBe(`${M}/action-jobs/a%2F..%2Fb`);
  });

  it('reads the detail of a real run id from the run list', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    const runs = await client.get('data_ingestion');
    const run = runs[0];
    if (!run) throw new Error('the simulator has no ingestion runs');
    const tasks = await client.get('data_ingestion_detail', run.id);
    expect(tasks.length).toBeGreaterThan(0);
    expect(requestsTo(s, 'data_ingestion_detail')[0]?.rawPath).toBe(`${M}/data-ingestion/detail/${encodeURIComponent(run.id)}`);
  });

  it('sends the connector sort with the comma as %2C', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s, { connectorSort: 'display_name,asc' }));
    await client.get('connector');
    expect(requestsTo(s, 'connector')[0]?.rawQuery).toBe('page=0&size=20&sort=display_name%2Casc');
  });
});

describe('paging', () => {
  const size = { connectors: 15, profilesPerConnector: 2, runsPerConnector: 3, actions: 9 };
  const runKey = (r: { bridge_name: string; profile?: unknown; _time?: number | null; _utc?: unknown }) =>
    JSON.stringify([r.bridge_name, r.profile, r._time, r._utc]);

  it('reads every page of the connector history on a first poll and keeps the newest run of every key', async () => {
    const s = await sim({ size });
    const history = (await (await fetch(`${s.url}/_admin/state`)).json() as { counts: { connectorRuns: number } }).counts.connectorRuns;
    const { client: whole } = makeClient(simStack(s, { paging: { connectorPageSize: 10_000 } }));
    const all = await whole.get('connector');
    s.clearRequests();
    const { client } = makeClient(simStack(s, { paging: { connectorPageSize: 7 } }));
    const paged = await client.get('connector');
    expect(history).toBeGreaterThan(7 * 5);
    // One row per key, whatever the page size: the same newest rows.
    expect(new Set(paged.map(runKey)).size).toBe(paged.length);
    expect(new Set(paged.map((r) => JSON.stringify(r)))).toEqual(new Set(all.map((r) => JSON.stringify(r))));
    const queries = requestsTo(s, 'connector').map((r) => r.rawQuery);
    const pages = Math.ceil(history / 7);
    expect(queries).toEqual(Array.from({ length: pages }, (_, i) => `page=${i}&size=7&sort=_time%2Cdesc`));
  });

  it('reads every page of the Action list', async () => {
    const s = await sim({ size });
    const { client } = makeClient(simStack(s, { paging: { actionPageSize: 4 } }));
    const actions = await client.get('actions');
    expect(actions).toHaveLength(9);
    expect(new Set(actions.map((a) => a.actionId)).size).toBe(9);
    expect(requestsTo(s, 'actions').map((r) => r.rawQuery)).toEqual(['page=0&size=4', 'page=1&size=4', 'page=2&size=4']);
  });

  it('stops at maxPages with a warning and cmdb_pages_truncated_total', async () => {
    const s = await sim({ size });
    const { client, log, metrics } = makeClient(simStack(s, { paging: { connectorPageSize: 5, maxPages: 3 } }));
    const rows = await client.get('connector');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(15);
    expect(requestsTo(s, 'connector')).toHaveLength(3);
    expect(log.lines().find((l) => l.level === 'warn')).toMatchObject({ endpoint: 'connector', maxPages: 3 });
    expect(await metrics.value('cmdb_pages_truncated_total', { stack: 'test', endpoint: 'connector' })).toBe(1);
  });
});

describe('connector history: full, then incremental scans', () => {
  const size = { connectors: 15, profilesPerConnector: 2, runsPerConnector: 24 };

  it('a second poll asks for sort=_time,desc and reads a fraction of the bytes', async () => {
    const s = await sim({ size });
    const { client, metrics } = makeClient(simStack(s, { paging: { connectorPageSize: 40 } }));
    const first = await client.get('connector');
    const fullQueries = requestsTo(s, 'connector').map((r) => r.rawQuery);
    const fullBytes = s.requests().reduce((n, r) => n + (r.endpoint === 'connector' ? r.bytes : 0), 0);
    s.clearRequests();
    const second = await client.get('connector');
    expect(fullQueries.every((q) => q.includes('size=40&sort=_time%2Cdesc'))).toBe(true);
    expect(fullQueries.length).toBeGreaterThan(2);
    const later = requestsTo(s, 'connector');
    // Pages of 25 (the first page of an incremental read; 40 does not divide what was read).
    expect(later.map((r) => r.rawQuery)).toEqual(later.map((_, i) => `page=${i}&size=25&sort=_time%2Cdesc`));
    // Only the runs within the margin of the newest one held, and one page more at most.
    expect(later.length).toBeLessThan(fullQueries.length / 3);
    const laterBytes = s.requests().reduce((n, r) => n + (r.endpoint === 'connector' ? r.bytes : 0), 0);
    expect(laterBytes).toBeLessThan(fullBytes / 3);
    expect(second).toEqual(first);
    expect(await metrics.value('cmdb_connector_scans_total', { stack: 'test', kind: 'full' })).toBe(1);
    expect(await metrics.value('cmdb_connector_scans_total', { stack: 'test', kind: 'incremental' })).toBe(1);
    expect(await metrics.value('cmdb_endpoint_response_bytes_total', { stack: 'test', endpoint: 'connector' })).toBe(fullBytes + laterBytes);
  });

  it('connectors that run once a day, as on the real service: a poll 5 minutes after the full scan is one 25-row page', async () => {
    // The benchmark's medium size with the built-in page size: a full scan is 2 pages of 2,000.
    const s = await sim({ size: { connectors: 530, profilesPerConnector: 2, runsPerConnector: 3 }, connectorPeriodSeconds: 86_400 });
    const { client } = makeClient(simStack(s, { paging: { connectorPageSize: 2000 } }));
    await client.get('connector');
    expect(requestsTo(s, 'connector').map((r) => r.rawQuery)).toEqual(['page=0&size=2000&sort=_time%2Cdesc', 'page=1&size=2000&sort=_time%2Cdesc']);
    for (let poll = 0; poll < 3; poll++) {
      s.clearRequests();
      s.scenario.advance(300);
      await client.get('connector');
      expect(requestsTo(s, 'connector').map((r) => r.rawQuery)).toEqual(['page=0&size=25&sort=_time%2Cdesc']);
    }
  });

  it('a service that ignores the sort: the poll falls back to a full scan, with a counter and a log line', async () => {
    const s = await sim({ size, ignoreSort: true });
    const { client, metrics, log } = makeClient(simStack(s, { paging: { connectorPageSize: 40 } }));
    const first = await client.get('connector');
    s.clearRequests();
    const second = await client.get('connector');
    const queries = requestsTo(s, 'connector').map((r) => r.rawQuery);
    expect(queries[0]).toBe('page=0&size=25&sort=_time%2Cdesc');
    // The fallback is a full scan: pages of the configured size.
    expect(queries.slice(1).every((q) => q.includes('size=40'))).toBe(true);
    expect(second).toEqual(first);
    expect(await metrics.value('cmdb_connector_sort_fallbacks_total', { stack: 'test' })).toBe(1);
    expect(await metrics.value('cmdb_connector_scans_total', { stack: 'test', kind: 'full' })).toBe(2);
    expect(log.lines().find((l) => l.level === 'warn' && String(l.msg).includes('not sorted by _time'))).toMatchObject({ endpoint: 'connector', page: 0 });
  });
});

describe('only the spec paths', () => {
  it('every client method requests only paths from PATHS, never …/data-ingestion/run', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s, { paging: { connectorPageSize: 5, actionPageSize: 2 } }));
    const runs = await client.get('data_ingestion');
    const actions = await client.get('actions');
    await client.get('metrics_data');
    await client.get('license');
    await client.get('connector');
    await client.get('data_ingestion_next');
    await client.get('data_ingestion_detail', runs[0]?.id ?? 'none');
    await client.get('action_jobs', actions[0]?.actionId ?? 'none');
    await client.get('asset_change', trackedAsset());
    await client.get('user_change', trackedUser());
    await client.get('user_change', 'no-such-user');
    // The saved queries' reader, on the same client.
    await client.queries.fields('asset');
    await client.queries.count('asset', [[{ searchFieldName: 'Asset_Type', operator: '==', type: 'String', value: 'Server' }]]);
    const allowed = new Set<string>([
      TOKEN_PATH,
      ...DATA_ENDPOINTS.flatMap((e) => PATHS[e]('')),
      ...PATHS.data_metadata('asset'),
      ...PATHS.data_ingestion_detail(runs[0]?.id ?? 'none'),
      ...PATHS.action_jobs(actions[0]?.actionId ?? 'none'),
    ]);
    const requested = s.requests().map((r) => r.rawPath);
    expect(requested.length).toBeGreaterThanOrEqual(13);
    expect(requested.filter((p) => !allowed.has(p))).toEqual([]);
    expect(requested.some((p) => p.includes('/data-ingestion/run'))).toBe(false);
    expect(new Set(s.requests().map((r) => r.endpoint))).toEqual(
      new Set(['access_token', ...DATA_ENDPOINTS]),
    );
  });
});

describe('the saved queries\' reader: a POST on the same road as every GET', () => {
  it('POSTs the count as JSON with the bearer token, validates the answer, counts the request', async () => {
    const s = await sim();
    const { client, metrics } = makeClient(simStack(s));
    const count = await client.queries.count('asset', [[{ searchFieldName: 'Asset_Name', operator: 'exists', type: 'String', value: null }]]);
    // Every asset has a name: the count of all assets (the simulator's default, --asset-records 400).
    expect(count).toBe(400);
    const sent = requestsTo(s, 'data_query');
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ method: 'POST', rawPath: '/CMDB/v2/data/cmdb', status: 200 });
    expect(sent[0]?.headers['content-type']).toBe('application/json');
    expect(sent[0]?.headers.authorization).toMatch(/^Bearer \S+$/);
    expect(JSON.parse(sent[0]?.body ?? '{}')).toMatchObject({ table: 'asset', paging: { page: 99_999, recordsPerPage: 1 } });
    expect(await metrics.outcomes('data_query')).toEqual({ '200': 1 });
  });

  it('throws CmdbHttpError with the POST named for a non-2xx answer', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'data_query', status: 503 });
    const { client } = makeClient(simStack(s, { retries: { max: 0 } }));
    const err = await rejection(client.queries.count('asset', []));
    expect(err).toBeInstanceOf(CmdbHttpError);
    expect((err as CmdbHttpError).message).toContain('POST /CMDB/v2/data/cmdb');
    expect((err as CmdbHttpError).status).toBe(503);
  });
});
