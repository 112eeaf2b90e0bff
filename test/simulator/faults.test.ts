import { describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS, PATHS, TOKEN_PATH, type DataEndpoint } from '../../src/api/endpoints.js';
import { TokenResponseSchema, validate } from '../../src/api/schemas.js';
import { ConfigError } from '../../src/errors.js';
import type { FaultRule } from '../../src/simulator/api.js';
import { SCHEMAS } from './schemas.js';
import { fetchToken, get, post, sim, spellings } from './helpers.js';

const LICENSE = PATHS.license()[0] as string;

describe('status faults', () => {
  it('answers the injected status for the next `times` requests, then expires', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', status: 503, times: 2 });
    const first = await get(s, LICENSE, token);
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ code: 503 });
    expect(s.faults()).toEqual([{ endpoint: 'license', status: 503, times: 1 }]);
    expect((await get(s, LICENSE, token)).status).toBe(503);
    expect(s.faults()).toEqual([]);
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it('stays until cleared when `times` is unset', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', status: 500 });
    for (let i = 0; i < 3; i++) expect((await get(s, LICENSE, token)).status).toBe(500);
    s.clearFaults();
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it('sends the given body with the status', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', status: 502, body: '<html>Bad gateway</html>' });
    const a = await get(s, LICENSE, token);
    expect(a.status).toBe(502);
    expect(a.text).toBe('<html>Bad gateway</html>');
  });

  it.each([
    [7, '7'],
    [undefined, null],
  ])('sends 429 with Retry-After %s', async (retryAfterSeconds, header) => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', status: 429, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }), times: 1 });
    const a = await get(s, LICENSE, token);
    expect(a.status).toBe(429);
    expect(a.headers.get('retry-after')).toBe(header);
  });

  it('applies a `*` rule to every endpoint, the token endpoint included', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: '*', status: 500 });
    expect((await post(s, TOKEN_PATH, { clientID: s.clientId, secret: s.secret })).status).toBe(500);
    for (const endpoint of DATA_ENDPOINTS) {
      expect((await get(s, spellings(s, endpoint)[0] as string, token)).status).toBe(500);
    }
  });

  it('faults only the named spelling when a rule gives a path', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const plural = PATHS.actions()[0] as string;
    const singular = PATHS.actions()[1] as string;
    s.addFault({ endpoint: 'actions', path: plural, status: 404 });
    expect((await get(s, plural, token)).status).toBe(404);
    expect((await get(s, singular, token)).status).toBe(200);
  });

  it('lets the first matching rule win, and counts only that one', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', status: 503, times: 1 });
    s.addFault({ endpoint: '*', status: 500, times: 1 });
    expect((await get(s, LICENSE, token)).status).toBe(503);
    expect((await get(s, LICENSE, token)).status).toBe(500);
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it('starts with the faults given in the options', async () => {
    const s = await sim({ faults: [{ endpoint: 'license', status: 504 }] });
    const token = await fetchToken(s);
    expect((await get(s, LICENSE, token)).status).toBe(504);
  });
});

describe('latency', () => {
  it('delays the answer by at least latencyMs, alone or with a status', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', latencyMs: 150, times: 1 });
    s.addFault({ endpoint: 'license', latencyMs: 150, status: 503, times: 1 });
    let started = Date.now();
    expect((await get(s, LICENSE, token)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    started = Date.now();
    expect((await get(s, LICENSE, token)).status).toBe(503);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });
});

describe('broken bodies', () => {
  it.each(DATA_ENDPOINTS)('malformedJson on %s answers 200 with the real body cut short', async (endpoint: DataEndpoint) => {
    const s = await sim();
    const token = await fetchToken(s);
    const path = spellings(s, endpoint)[0] as string;
    const normal = await get(s, path, token);
    s.addFault({ endpoint, malformedJson: true, times: 1 });
    const a = await get(s, path, token);
    expect(a.status).toBe(200);
    expect(() => JSON.parse(a.text)).toThrow();
    expect(normal.text.startsWith(a.text)).toBe(true);
  });

  it.each(DATA_ENDPOINTS)('wrongShape on %s answers 200 with valid JSON that fails its schema', async (endpoint: DataEndpoint) => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint, wrongShape: true, times: 1 });
    const a = await get(s, spellings(s, endpoint)[0] as string, token);
    expect(a.status).toBe(200);
    expect(a.body).toBeDefined();
    expect(validate(SCHEMAS[endpoint], a.body).ok).toBe(false);
  });

  it('wrongShape on the token endpoint answers a body without a token', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'access_token', wrongShape: true, times: 1 });
    const a = await post(s, TOKEN_PATH, { clientID: s.clientId, secret: s.secret });
    expect(a.status).toBe(200);
    const parsed = validate(TokenResponseSchema, a.body);
    expect(parsed.ok && parsed.value.data?.token).toBeFalsy();
    expect(s.issuedTokens()).toEqual([]);
  });

  it('malformedJson on the token endpoint issues no usable token', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'access_token', malformedJson: true, times: 1 });
    const a = await post(s, TOKEN_PATH, { clientID: s.clientId, secret: s.secret });
    expect(a.status).toBe(200);
    expect(a.body).toBeUndefined();
    expect(s.issuedTokens()).toEqual([]);
  });
});

describe('connection reset and redirect', () => {
  it('destroys the socket without an answer, recorded with status 0', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', reset: true, times: 1 });
    await expect(get(s, LICENSE, token)).rejects.toThrow();
    expect(s.requests().at(-1)).toMatchObject({ endpoint: 'license', status: 0 });
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it.each([
    [undefined, 302],
    [307, 307],
  ])('redirects with status %s to the given Location', async (status, expected) => {
    const s = await sim();
    const token = await fetchToken(s);
    const target = `${s.url}/elsewhere`;
    s.addFault({ endpoint: 'license', redirectTo: target, ...(status ? { status } : {}), times: 1 });
    const a = await get(s, LICENSE, token);
    expect(a.status).toBe(expected);
    expect(a.headers.get('location')).toBe(target);
  });
});

describe('rule validation', () => {
  it.each<[string, unknown]>([
    ['an unknown endpoint', { endpoint: 'licence', status: 500 }],
    ['no effect at all', { endpoint: 'license', times: 2 }],
    ['a status outside 100–599', { endpoint: 'license', status: 700 }],
    ['times of zero', { endpoint: 'license', status: 500, times: 0 }],
    ['a redirect with a non-3xx status', { endpoint: 'license', redirectTo: '/x', status: 200 }],
    ['an unknown key', { endpoint: 'license', status: 500, sometimes: true }],
  ])('rejects a rule with %s', async (_name, rule) => {
    const s = await sim();
    expect(() => s.addFault(rule as FaultRule)).toThrow(ConfigError);
    expect(s.faults()).toEqual([]);
  });
});
