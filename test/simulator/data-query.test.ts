/**
 * The simulator's data query endpoint and field metadata, as the real service answers them
 * (docs/cmdb-api-notes.md, "The data query endpoint"): counts over the records the mergers built,
 * its silent zeros, the 400 and the ignored window of the windowed operators, the paging clamp, and
 * rebuilds that change the counts and move the merger rows of the connector history.
 */
import { describe, expect, it } from 'vitest';
import { PATHS } from '../../src/api/endpoints.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { fetchToken, get, post, sim } from './helpers.js';

const QUERY_PATH = PATHS.data_query()[0] as string;
type Crit = { searchFieldName: string; operator: string; type: string; value: unknown };
const c = (searchFieldName: string, operator: string, type: string, value: unknown): Crit => ({ searchFieldName, operator, type, value });

async function ask(s: SimulatorServer, token: string, query: unknown, paging: unknown = { page: 0, recordsPerPage: 1 }, table = 'asset') {
  const a = await post(s, QUERY_PATH, { table, query, paging }, { Authorization: `Bearer ${token}` });
  return { status: a.status, body: a.body as { totalRecords: number; data: unknown[]; recordsPerPage: number; page: number; totalPages: number; code?: number } };
}

async function setup() {
  const s = await sim({ connectorPeriodSeconds: 86_400 });
  return { s, token: await fetchToken(s) };
}

const assets = (s: SimulatorServer) => s.dataset.records.asset.records();
const servers = (s: SimulatorServer) => assets(s).filter((r) => r.Asset_Type === 'Server').length;

describe('field metadata', () => {
  it.each([
    ['asset', ['Asset_Name', 'String'], ['Asset_Type', 'String'], ['OS', 'String'], ['sourcetype', 'List'], ['EP_Not_Installed', 'Binary'], ['Is_Public', 'Binary'], ['Last_Discovered_Datetime', 'Datetime'], ['Risk_Score', 'Float'], ['EXT_Open_Ports', 'List'], ['High_CVE', 'Integer']],
    ['user', ['User_Name', 'String'], ['Risk_Score', 'Float'], ['Is_Admin', 'Binary'], ['sourcetype', 'List'], ['Last_Login_Datetime', 'Datetime']],
  ] as const)('%s lists its fields with their data types', async (table, ...fields) => {
    const { s, token } = await setup();
    const a = await get(s, PATHS.data_metadata(table)[0] as string, token);
    expect(a.status).toBe(200);
    const metadata = (a.body as { metadata: Array<Record<string, string>> }).metadata;
    for (const [name, type] of fields) expect(metadata).toContainEqual(expect.objectContaining({ fieldName: name, dataType: type, displayName: expect.any(String), fieldGroup: expect.any(String) }));
  });

  it('answers 404 for another table', async () => {
    const { s, token } = await setup();
    expect((await get(s, '/CMDB/v2/data/metadata/device', token)).status).toBe(404);
  });
});

describe('counts', () => {
  it('counts AND of OR groups over the records', async () => {
    const { s, token } = await setup();
    const a = await ask(s, token, [[c('Asset_Type', '==', 'String', 'Server'), c('Asset_Type', '==', 'String', 'Laptop')], [c('EP_Not_Installed', '==', 'Binary', 'True')]]);
    const expected = assets(s).filter((r) => (r.Asset_Type === 'Server' || r.Asset_Type === 'Laptop') && r.EP_Not_Installed === true).length;
    expect(a).toMatchObject({ status: 200, body: { totalRecords: expected } });
    expect(expected).toBeGreaterThan(0);
  });

  it.each<[string, unknown]>([
    ['a quoted number on an Integer field', [[c('High_CVE', '>=', 'Integer', '0')]]],
    ['a quoted number on a Float field', [[c('Risk_Score', '>=', 'Float', '0')]]],
    ['a wrong type', [[c('Asset_Type', '==', 'Binary', 'Server')]]],
    ['a misspelt field', [[c('Asset_type', '==', 'String', 'Server')]]],
    ['a wrong-case value for ==', [[c('Asset_Type', '==', 'String', 'server')]]],
    ['a wrong-case Binary text', [[c('EP_Not_Installed', '==', 'Binary', 'true')]]],
    ['a Binary text with spaces', [[c('EP_Not_Installed', '==', 'Binary', ' Yes ')]]],
    ['a wrong-case Binary text for !=', [[c('EP_Not_Installed', '!=', 'Binary', 'false')]]],
    ['an under-nested query', [c('Asset_Type', '==', 'String', 'Server')]],
    ['an over-nested query', [[[c('Asset_Type', '==', 'String', 'Server')]]]],
  ])('answers a confident 0 for %s, as the real service does', async (_what, query) => {
    const { s, token } = await setup();
    expect(servers(s)).toBeGreaterThan(0);
    expect(await ask(s, token, query)).toMatchObject({ status: 200, body: { totalRecords: 0 } });
  });

  it('the same counts written right are not 0', async () => {
    const { s, token } = await setup();
    const withoutEdr = assets(s).filter((r) => r.EP_Not_Installed === true).length;
    expect(withoutEdr).toBeGreaterThan(0);
    for (const value of ['True', 'Yes', 1, true]) expect((await ask(s, token, [[c('EP_Not_Installed', '==', 'Binary', value)]])).body.totalRecords).toBe(withoutEdr);
    expect((await ask(s, token, [[c('EP_Not_Installed', '!=', 'Binary', 'False')]])).body.totalRecords).toBe(withoutEdr);
    expect((await ask(s, token, [[c('High_CVE', '>=', 'Integer', 0)]])).body.totalRecords).toBe(assets(s).length);
    expect((await ask(s, token, [[c('Asset_Type', '==', 'String', 'Server')]])).body.totalRecords).toBe(servers(s));
  });

  it.each(['within past', 'not within past'])('answers %s with 400 Invalid operator', async (operator) => {
    const { s, token } = await setup();
    expect(await ask(s, token, [[c('Last_Discovered_Datetime', operator, 'Datetime', '30 days')]])).toMatchObject({ status: 400, body: { message: 'Invalid operator' } });
  });

  it.each(['within', 'within future', 'not within', 'not within future'])('answers %s ignoring the window: the same count for 1 day and 10 years', async (operator) => {
    const { s, token } = await setup();
    const day = await ask(s, token, [[c('Last_Discovered_Datetime', operator, 'Datetime', '1 day')]]);
    const decade = await ask(s, token, [[c('Last_Discovered_Datetime', operator, 'Datetime', '3650 days')]]);
    expect(day.status).toBe(200);
    expect(day.body.totalRecords).toBe(decade.body.totalRecords);
  });

  it('answers not within 30 days with 0 where the absolute form finds many', async () => {
    const { s, token } = await setup();
    const cut = new Date(Date.parse('2025-03-10T00:00:00Z') - 30 * 86_400_000).toISOString().slice(0, 19).replace('T', ' ');
    expect((await ask(s, token, [[c('Last_Discovered_Datetime', 'not within', 'Datetime', '30 days')]])).body.totalRecords).toBe(0);
    expect((await ask(s, token, [[c('Last_Discovered_Datetime', '<', 'Datetime', cut)]])).body.totalRecords).toBeGreaterThan(0);
  });

  it.each([
    ['Integer', 'High_CVE', 'match', 400001],
    ['String', 'Asset_Type', '>', 400002],
    ['Binary', 'Is_Public', 'in', 400003],
  ])('answers an operator a %s field does not take with 400 and the sub-code', async (type, field, operator, code) => {
    const { s, token } = await setup();
    expect(await ask(s, token, [[c(field, operator, type, 1)]])).toMatchObject({ status: 400, body: { code } });
  });

  it('clamps recordsPerPage to 100, resets 0 or less to 20, and answers a page past the end with the count and no record', async () => {
    const { s, token } = await setup();
    const all = [[c('Asset_Name', 'exists', 'String', null)]];
    expect(assets(s).length).toBeGreaterThan(100);
    const big = await ask(s, token, all, { page: 0, recordsPerPage: 500 });
    expect(big.body).toMatchObject({ recordsPerPage: 100, totalRecords: assets(s).length });
    expect(big.body.data).toHaveLength(100);
    expect((await ask(s, token, all, { page: 0, recordsPerPage: 0 })).body).toMatchObject({ recordsPerPage: 20 });
    const past = await ask(s, token, all, { page: 99_999, recordsPerPage: 1 });
    expect(past.body).toMatchObject({ totalRecords: assets(s).length, data: [], page: 99_999 });
  });

  it('records the body of each count in the request log', async () => {
    const { s, token } = await setup();
    await ask(s, token, [[c('Asset_Type', '==', 'String', 'Server')]]);
    expect(JSON.parse(s.requests().at(-1)?.body ?? '{}')).toMatchObject({ table: 'asset' });
  });
});

describe('rebuilds', () => {
  it('change the counts only when the mergers run, and move the merger rows of the history', async () => {
    const { s, token } = await setup();
    const query = [[c('EP_Not_Installed', '==', 'Binary', 'True')]];
    const mergerTimes = () => s.dataset.history.all().filter((r) => r.platform === 'ML-ENGINE').map((r) => r._time);
    const first = (await ask(s, token, query)).body.totalRecords;
    const rebuiltAt = s.dataset.records.asset.rebuiltAtMs;
    s.scenario.advance(3600);
    expect((await ask(s, token, query)).body.totalRecords, 'no merger ran: the same count').toBe(first);
    const before = Math.max(...mergerTimes());
    const counts = new Set([first]);
    for (let i = 0; i < 5; i++) {
      s.scenario.advance(600);
      s.scenario.rebuild();
      counts.add((await ask(s, token, query)).body.totalRecords);
    }
    expect(counts.size, 'rebuilds change the count').toBeGreaterThan(1);
    expect(s.dataset.records.asset.rebuiltAtMs).toBeGreaterThan(rebuiltAt);
    expect(Math.max(...mergerTimes())).toBeGreaterThan(before);
    expect(s.state().records.asset.rebuiltAt).toBe(new Date(s.dataset.records.asset.rebuiltAtMs).toISOString());
  });

  it('a failed merger run rebuilds nothing', async () => {
    const { s } = await setup();
    const rebuiltAt = s.dataset.records.asset.rebuiltAtMs;
    s.scenario.advance(600);
    s.scenario.runConnector('Lucidum Asset Merger', 'Error');
    expect(s.dataset.records.asset.rebuiltAtMs).toBe(rebuiltAt);
  });

  it('rebuild() without a merger in the dataset says why', async () => {
    const s = await sim({ size: { connectors: 3 } });
    expect(() => s.scenario.rebuild()).toThrow(/no merger/);
  });
});
