import { describe, expect, it } from 'vitest';
import { PATHS } from '../../src/api/endpoints.js';
import { fetchToken, get, request, sim } from './helpers.js';

const LICENSE = PATHS.license()[0] as string;

describe('admin state', () => {
  it('lists what exists: connectors, Action ids, run ids, tracked names, license expiry, counts', async () => {
    const s = await sim();
    const a = await request(s, 'GET', '/_admin/state');
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('application/json');
    const state = a.body as ReturnType<typeof s.state>;
    expect(state).toEqual(JSON.parse(JSON.stringify(s.state())));
    expect(state.counts).toMatchObject({ connectors: 12, actions: 6, ingestionRuns: 8 });
    expect(state.connectors.map((c) => c.bridgeName)).toContain('crowdstrike_falcon');
    expect(state.actionIds).toContain('4100');
    expect(state.ingestionRunIds).toHaveLength(8);
    expect(state.trackedAssets).toHaveLength(3);
    expect(state.licenseExpiry).toBe('2026-03-10');
  });

  it('needs no token and leaves admin calls out of the request log', async () => {
    const s = await sim();
    await request(s, 'GET', '/_admin/state');
    await request(s, 'GET', '/_admin/faults');
    expect(s.requests()).toEqual([]);
  });
});

describe('admin requests', () => {
  it('returns the request log and clears it on DELETE', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    await get(s, `${LICENSE}?a=%20b`, token);
    const log = await request(s, 'GET', '/_admin/requests');
    expect(log.body).toMatchObject([{ endpoint: 'access_token' }, { rawPath: LICENSE, rawQuery: 'a=%20b', status: 200 }]);
    expect((await request(s, 'DELETE', '/_admin/requests')).status).toBe(200);
    expect(s.requests()).toEqual([]);
  });
});

describe('admin faults', () => {
  it('adds a rule (or a list), lists them, and clears them', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const added = await request(s, 'POST', '/_admin/faults', { endpoint: 'license', status: 503, times: 1 });
    expect(added.status).toBe(200);
    expect((await get(s, LICENSE, token)).status).toBe(503);
    await request(s, 'POST', '/_admin/faults', [
      { endpoint: 'license', status: 500 },
      { endpoint: 'connector', wrongShape: true },
    ]);
    expect((await request(s, 'GET', '/_admin/faults')).body).toEqual([
      { endpoint: 'license', status: 500 },
      { endpoint: 'connector', wrongShape: true },
    ]);
    expect((await request(s, 'DELETE', '/_admin/faults')).status).toBe(200);
    expect(s.faults()).toEqual([]);
  });

  it.each<[string, unknown]>([
    ['an unknown endpoint', { endpoint: 'nope', status: 500 }],
    ['a rule without effect', { endpoint: 'license' }],
    ['a status given as text', { endpoint: 'license', status: '500' }],
    ['one bad rule in a list', [{ endpoint: 'license', status: 500 }, { endpoint: 'license', times: -1, status: 500 }]],
  ])('rejects %s with 400 and adds nothing', async (_name, body) => {
    const s = await sim();
    const a = await request(s, 'POST', '/_admin/faults', body);
    expect(a.status).toBe(400);
    expect((a.body as { message: string }).message.length).toBeGreaterThan(5);
    expect(s.faults()).toEqual([]);
  });
});

describe('admin access controls', () => {
  it('sets and clears token expiry', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    expect((await request(s, 'POST', '/_admin/token-expiry', { afterRequests: 1 })).status).toBe(200);
    expect((await get(s, LICENSE, token)).status).toBe(200);
    expect((await get(s, LICENSE, token)).status).toBe(401);
    expect((await request(s, 'POST', '/_admin/token-expiry', {})).body).toEqual({ tokenExpiry: null });
    expect(s.state().tokenExpiry).toBeNull();
  });

  it('sets and clears the rate limit', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    await request(s, 'POST', '/_admin/rate-limit', { perMinute: 0, retryAfter: true });
    const limited = await get(s, LICENSE, token);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).not.toBeNull();
    await request(s, 'POST', '/_admin/rate-limit', null);
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it('forbids endpoints given as a list or as {endpoints}', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    await request(s, 'POST', '/_admin/forbid', ['license']);
    expect((await get(s, LICENSE, token)).status).toBe(403);
    await request(s, 'POST', '/_admin/forbid', { endpoints: [] });
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it.each<[string, string, unknown]>([
    ['token-expiry with a negative count', '/_admin/token-expiry', { afterRequests: -1 }],
    ['token-expiry with an unknown key', '/_admin/token-expiry', { afterMinutes: 1 }],
    ['rate-limit without perMinute', '/_admin/rate-limit', { retryAfter: true }],
    ['forbid with the token endpoint', '/_admin/forbid', ['access_token']],
    ['forbid with an unknown endpoint', '/_admin/forbid', { endpoints: ['licence'] }],
  ])('rejects %s with 400', async (_name, path, body) => {
    const s = await sim();
    const a = await request(s, 'POST', path, body);
    expect(a.status).toBe(400);
    expect(a.body).toMatchObject({ code: 400 });
  });
});

describe('admin scenario', () => {
  it('runs a control with named arguments, visible on the next request', async () => {
    const s = await sim();
    const a = await request(s, 'POST', '/_admin/scenario/runConnector', { bridgeName: 'aws_ec2', status: 'Error' });
    expect(a.status).toBe(200);
    const rows = s.dataset.history.runsOf('aws_ec2');
    const newest = Math.max(...rows.map((r) => r._time));
    expect(rows.filter((r) => r._time === newest).every((r) => r.status === 'Error')).toBe(true);
  });

  it('runs a control with positional arguments', async () => {
    const s = await sim();
    expect((await request(s, 'POST', '/_admin/scenario/setAssetCount', [5])).status).toBe(200);
    const token = await fetchToken(s);
    expect((await get(s, PATHS.metrics_data()[0] as string, token)).body).toMatchObject({ assetCount: 5 });
  });

  it('advances time', async () => {
    const s = await sim();
    const before = s.state().now;
    await request(s, 'POST', '/_admin/scenario/advance', { seconds: 600 });
    expect(Date.parse(s.state().now) - Date.parse(before)).toBe(600_000);
  });

  it.each<[string, string, unknown]>([
    ['an unknown connector', 'runConnector', { bridgeName: 'nope', status: 'Error' }],
    ['a missing argument', 'runConnector', { bridgeName: 'aws_ec2' }],
    ['an unknown argument', 'runConnector', { bridge: 'aws_ec2', status: 'Error' }],
    ['a bad outcome', 'runIngestion', { outcome: 'maybe' }],
    ['a count given as text', 'setUserCount', { count: '5' }],
    ['a body that is a number', 'advance', 5],
  ])('rejects %s with 400 naming the problem', async (_name, control, body) => {
    const s = await sim();
    const a = await request(s, 'POST', `/_admin/scenario/${control}`, body);
    expect(a.status).toBe(400);
    expect(a.body).toMatchObject({ code: 400 });
    expect((a.body as { message: string }).message).toMatch(/\w+: /);
  });
});

describe('admin routing', () => {
  it.each([
    ['GET', '/_admin/nothing', 404],
    ['POST', '/_admin/scenario/dropTables', 404],
    ['GET', '/_admin/scenario/advance', 405],
    ['POST', '/_admin/state', 405],
    ['PUT', '/_admin/faults', 405],
  ])('%s %s answers %i', async (method, path, status) => {
    const s = await sim();
    expect((await request(s, method, path)).status).toBe(status);
  });

  it('answers 400 to a body that is not JSON', async () => {
    const s = await sim();
    const a = await request(s, 'POST', '/_admin/faults', '{"endpoint":');
    expect(a.status).toBe(400);
    expect(a.body).toMatchObject({ message: 'request body is not valid JSON' });
  });
});
