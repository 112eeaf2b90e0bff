/** Response bodies, headers, request metrics and secrets, against the simulator. */
import { describe, expect, it } from 'vitest';
import { CmdbError, CmdbInvalidBodyError, CmdbTooLargeError } from '../../src/errors.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { makeClient, rejection } from './helpers/client.js';
import { requestsTo, sim, simStack } from './helpers/sim.js';

describe('bodies', () => {
  it('returns validated data for every endpoint', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s));
    expect(await client.get('metrics_data')).toMatchObject({ assetCount: expect.any(Number), userCount: expect.any(Number) });
    expect((await client.get('license')).licenseType).toEqual(expect.any(String));
    expect((await client.get('connector')).length).toBeGreaterThan(0);
    expect((await client.get('data_ingestion')).length).toBeGreaterThan(0);
    expect(await client.get('data_ingestion_next')).toHaveProperty('schedule_interval_value');
    const [action] = await client.get('actions');
    expect((await client.get('action_jobs', action?.actionId ?? '')).length).toBeGreaterThan(0);
  });

  it('rejects a body above maxResponseBytes by its Content-Length, without retrying', async () => {
    const s = await sim();
    const { client, metrics } = makeClient(simStack(s, { maxResponseBytes: 512 }));
    const err = await rejection(client.get('connector'));
    expect(err).toBeInstanceOf(CmdbTooLargeError);
    expect(err.message).toBe('GET /CMDB/v2/system/metrics/connector: response larger than the 512-byte cap (maxResponseBytes)');
    expect(requestsTo(s, 'connector')).toHaveLength(1);
    expect(await metrics.outcomes('connector')).toEqual({ too_large: 1 });
  });

  it('a body that is not JSON is invalid_body with field "", after a retry per retries.max', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'connector', malformedJson: true });
    const { client, metrics } = makeClient(simStack(s));
    const err = await rejection(client.get('connector'));
    expect(err).toBeInstanceOf(CmdbInvalidBodyError);
    expect((err as CmdbInvalidBodyError).field).toBe('');
    expect(err.message).toMatch(/^GET \/CMDB\/v2\/system\/metrics\/connector: invalid response body: not JSON/);
    for (const planted of PLANTED_SECRETS) expect(err.message).not.toContain(planted);
    // A body cut short but correctly framed is retried like a dropped connection (retries.max 2).
    expect(requestsTo(s, 'connector')).toHaveLength(3);
    expect(await metrics.outcomes('connector')).toEqual({ invalid_body: 3 });
  });

  it.each(['license', 'connector', 'actions'] as const)('a 2xx of %s cut short once is retried and the poll succeeds', async (endpoint) => {
    const s = await sim();
    s.addFault({ endpoint, malformedJson: true, times: 1 });
    const { client, metrics } = makeClient(simStack(s));
    await expect(client.get(endpoint)).resolves.toBeDefined();
    // One retry of that request: a connector page cut short does not restart the scan (every
    // query asked once, the first one twice).
    const queries = requestsTo(s, endpoint).map((r) => r.rawQuery);
    expect(queries.slice(1)).toEqual([...new Set(queries)]);
    expect(await metrics.outcomes(endpoint)).toEqual({ invalid_body: 1, '200': queries.length - 1 });
  });

  it('JSON of the wrong shape is not retried', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', wrongShape: true });
    const { client } = makeClient(simStack(s));
    await expect(rejection(client.get('license'))).resolves.toBeInstanceOf(CmdbInvalidBodyError);
    expect(requestsTo(s, 'license')).toHaveLength(1);
  });

  it.each([
    ['metrics_data', 'assetCount'],
    ['connector', 'content'],
    ['data_ingestion', 'data_ingestion_runs'],
    ['actions', 'actions'],
  ] as const)('a body of the wrong shape from %s names the field (%s)', async (endpoint, field) => {
    const s = await sim();
    s.addFault({ endpoint, wrongShape: true });
    const { client, metrics } = makeClient(simStack(s));
    const err = await rejection(client.get(endpoint));
    expect(err).toBeInstanceOf(CmdbInvalidBodyError);
    expect((err as CmdbInvalidBodyError).field).toBe(field);
    expect(err.message).toContain(`invalid response body: ${field}: `);
    expect(await metrics.outcomes(endpoint)).toEqual({ invalid_body: 1 });
  });
});

describe('request headers', () => {
  it('sends Content-Type, Accept, Authorization and User-Agent on every v2 GET', async () => {
    const s = await sim();
    const { client } = makeClient(simStack(s, { userAgent: 'cmdb-exporter/9.9 (test)' }));
    await client.get('license');
    await client.get('user_change', 'x y');
    const [token] = s.issuedTokens();
    const data = s.requests().filter((r) => r.endpoint !== 'access_token');
    expect(data).toHaveLength(3); // license, user change (metadata, then plain after the 404)
    for (const r of data) {
      expect(r.method).toBe('GET');
      expect(r.headers).toMatchObject({
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${token}`,
        'user-agent': 'cmdb-exporter/9.9 (test)',
      });
    }
    const [tokenRequest] = requestsTo(s, 'access_token');
    expect(tokenRequest?.method).toBe('POST');
    expect(tokenRequest?.headers).toMatchObject({ 'content-type': 'application/json', 'user-agent': 'cmdb-exporter/9.9 (test)' });
    expect(tokenRequest?.headers.authorization).toBeUndefined();
  });
});

describe('request metrics', () => {
  it('observes every attempt per endpoint name, the token endpoint included', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 502, times: 1 });
    const { client, metrics } = makeClient(simStack(s));
    await client.get('license');
    await client.get('data_ingestion_detail', 'scheduled__nope').catch(() => undefined);
    expect(await metrics.outcomes('access_token')).toEqual({ '200': 1 });
    expect(await metrics.outcomes('license')).toEqual({ '502': 1, '200': 1 });
    expect(await metrics.outcomes('data_ingestion_detail')).toEqual({ '404': 1 });
    const count = (endpoint: string) =>
      metrics.value('cmdb_endpoint_request_duration_seconds_count', { stack: 'test', endpoint });
    expect(await count('access_token')).toBe(1);
    expect(await count('license')).toBe(2);
    expect(await count('data_ingestion_detail')).toBe(1);
    // The endpoint label is the endpoint name, never an id.
    const text = await metrics.text();
    expect(text).not.toContain('scheduled__nope');
  });
});

describe('secrets', () => {
  it('no error message, log line or metric ever holds the secret or a token', async () => {
    const s = await sim();
    const { client, log, metrics } = makeClient(simStack(s, { retries: { max: 0 }, timeoutSeconds: 0.3 }));
    const errors: CmdbError[] = [];
    const collect = (p: Promise<unknown>) =>
      p.catch((e: unknown) => {
        if (e instanceof CmdbError) errors.push(e);
      });
    await client.get('license');
    s.setTokenExpiry({ afterRequests: 0 });
    await collect(client.get('license')); // 401, new token, 401 again
    s.setTokenExpiry(undefined);
    s.addFault({ endpoint: 'license', status: 500, times: 1 });
    await collect(client.get('license'));
    s.addFault({ endpoint: 'license', malformedJson: true, times: 1 });
    await collect(client.get('license'));
    s.addFault({ endpoint: 'license', latencyMs: 1000, times: 1 });
    await collect(client.get('license'));
    s.addFault({ endpoint: 'license', redirectTo: 'http://localhost:1/CMDB/v2/system/metrics/license', times: 1 });
    await collect(client.get('license'));
    const { client: wrong } = makeClient(simStack(s, { auth: { kind: 'client', clientId: s.clientId, secret: 'wrong-secret-xyz', clientIdKey: 'clientID' } }));
    await collect(wrong.get('license'));
    expect(errors.map((e) => e.code)).toEqual([
      'CMDB_UNAUTHORIZED',
      'CMDB_HTTP_STATUS',
      'CMDB_INVALID_BODY',
      'CMDB_TIMEOUT',
      'CMDB_REDIRECT_REFUSED',
      'CMDB_TOKEN_REJECTED',
    ]);
    const secrets = [s.secret, 'wrong-secret-xyz', ...s.issuedTokens(), ...PLANTED_SECRETS];
    const everything = [...errors.map((e) => `${e.message} ${String(e.cause ?? '')}`), log.text(), await metrics.text()].join('\n');
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });
});
