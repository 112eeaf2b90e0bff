import { describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS, PATHS, TOKEN_PATH, type DataEndpoint } from '../../src/api/endpoints.js';
import { TokenResponseSchema, validate } from '../../src/api/schemas.js';
import { ConfigError } from '../../src/errors.js';
import type { FaultRule } from '../../src/simulator/api.js';
import { parseFaultRule } from '../../src/simulator/faults.js';
import { SCHEMAS } from './schemas.js';
import { notYet, waitFor } from '../helpers/wait.js';
import { ask, fetchToken, get, post, sim, spellings } from './helpers.js';

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
      expect((await ask(s, endpoint, spellings(s, endpoint)[0] as string, token)).status).toBe(500);
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

describe('hold', () => {
  it('holds the answer until the faults are cleared, then answers as the rule says', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', hold: true, times: 1 });
    s.addFault({ endpoint: 'license', hold: true, status: 503, times: 1 });
    let answered = 0;
    const plain = get(s, LICENSE, token).finally(() => answered++);
    const failing = get(s, LICENSE, token).finally(() => answered++);
    // Both arrived and wait: held by the rules, which are used up (`times`).
    await waitFor('both held requests arrived', () => s.requests().length >= 3 || notYet(s.requests().length));
    expect(s.faults()).toEqual([]);
    // A request after them is answered: they are still held past it.
    expect((await get(s, LICENSE, token)).status).toBe(200);
    expect(answered).toBe(0);
    s.clearFaults();
    expect((await plain).status).toBe(200);
    expect((await failing).status).toBe(503);
  });

  it('is a fault on its own, also on the command line', () => {
    expect(parseFaultRule({ endpoint: 'license', hold: true })).toEqual({ endpoint: 'license', hold: true });
  });
});

describe('broken bodies', () => {
  it.each(DATA_ENDPOINTS)('malformedJson on %s answers 200 with the real body cut short', async (endpoint: DataEndpoint) => {
    const s = await sim();
    const token = await fetchToken(s);
    const path = spellings(s, endpoint)[0] as string;
    const normal = await ask(s, endpoint, path, token);
    s.addFault({ endpoint, malformedJson: true, times: 1 });
    const a = await ask(s, endpoint, path, token);
    expect(a.status).toBe(200);
    expect(() => JSON.parse(a.text)).toThrow();
    expect(normal.text.startsWith(a.text)).toBe(true);
  });

  it.each(DATA_ENDPOINTS)('wrongShape on %s answers 200 with valid JSON that fails its schema', async (endpoint: DataEndpoint) => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint, wrongShape: true, times: 1 });
    const a = await ask(s, endpoint, spellings(s, endpoint)[0] as string, token);
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

describe('streamed and typed fault answers', () => {
  it('sends an HTML error page with the Content-Type given', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', status: 503, body: '<html><body>down</body></html>', contentType: 'text/html' });
    const a = await get(s, LICENSE, token);
    expect(a.status).toBe(503);
    expect(a.headers.get('content-type')).toBe('text/html');
    expect(a.text).toBe('<html><body>down</body></html>');
  });

  it('drips the normal body one byte per write, complete and with its Content-Length', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const normal = await get(s, LICENSE, token);
    s.addFault({ endpoint: 'license', dripMs: 1 });
    const res = await fetch(`${s.url}${LICENSE}`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(normal.text)));
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let reads = 0;
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      reads++;
      text += Buffer.from(value).toString('latin1');
    }
    expect(Buffer.from(text, 'latin1').toString('utf8')).toBe(normal.text);
    // Arrives in many pieces (one per byte written, give or take coalescing by the client).
    expect(reads).toBeGreaterThan(10);
    // The server ends the response on its next tick, after the client already has every byte.
    const bytes = Buffer.byteLength(normal.text);
    await waitFor('the answer logged whole', () => (s.requests().at(-1)?.bytes === bytes && s.requests().at(-1)?.status === 200) || notYet(s.requests().at(-1)));
  });

  it.each([false, true])('sends an oversize JSON body of exactly the size asked (chunked: %s)', async (chunked) => {
    const s = await sim();
    const token = await fetchToken(s);
    const size = 300_000;
    s.addFault({ endpoint: 'license', oversizeBytes: size, ...(chunked ? { chunked } : {}) });
    const res = await fetch(`${s.url}${LICENSE}`, { headers: { Authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(chunked ? null : String(size));
    const text = await res.text();
    expect(text.length).toBe(size);
    expect(JSON.parse(text)).toEqual({ padding: 'x'.repeat(size - 14) });
    expect(s.requests().at(-1)).toMatchObject({ status: 200, bytes: size });
  });

  it('pads bodies below the JSON frame with spaces', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', oversizeBytes: 5 });
    expect((await get(s, LICENSE, token)).text).toBe('     ');
  });

  it('rejects chunked without oversizeBytes', () => {
    expect(() => parseFaultRule({ endpoint: 'license', status: 500, chunked: true })).toThrow(ConfigError);
  });
});
