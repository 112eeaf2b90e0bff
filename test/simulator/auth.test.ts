import { describe, expect, it } from 'vitest';
import { PATHS, TOKEN_PATH } from '../../src/api/endpoints.js';
import { TokenResponseSchema, validate } from '../../src/api/schemas.js';
import { fetchToken, get, post, sim } from './helpers.js';

const LICENSE = PATHS.license()[0] as string;

describe('token endpoint', () => {
  it.each(['clientID', 'clientId'])('issues a bearer token for valid credentials sent as %s', async (key) => {
    const s = await sim();
    const a = await post(s, TOKEN_PATH, { [key]: 'demo-client', secret: 'demo-secret' });
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('application/json');
    const parsed = validate(TokenResponseSchema, a.body);
    expect(parsed.ok).toBe(true);
    expect(a.body).toMatchObject({ code: 200, message: 'success' });
    const token = (a.body as { data: { token: string } }).data.token;
    expect(token.length).toBeGreaterThanOrEqual(20);
    expect(s.issuedTokens()).toEqual([token]);
  });

  it('issues a different token on every request', async () => {
    const s = await sim();
    const a = await fetchToken(s);
    const b = await fetchToken(s);
    expect(a).not.toBe(b);
  });

  it('honours overridden credentials and rejects the defaults then', async () => {
    const s = await sim({ clientId: 'other', secret: 'pw-123456' });
    expect((await post(s, TOKEN_PATH, { clientID: 'other', secret: 'pw-123456' })).status).toBe(200);
    expect((await post(s, TOKEN_PATH, { clientID: 'demo-client', secret: 'demo-secret' })).status).toBe(401);
  });

  it.each([
    ['a wrong secret', { clientID: 'demo-client', secret: 'nope' }],
    ['a wrong client id', { clientID: 'someone', secret: 'demo-secret' }],
  ])('rejects %s with 401 code 401002', async (_name, body) => {
    const s = await sim();
    const a = await post(s, TOKEN_PATH, body);
    expect(a.status).toBe(401);
    expect(a.body).toEqual({ code: 401002, message: 'Invalid client credentials' });
    expect(s.issuedTokens()).toEqual([]);
  });

  it.each([
    ['not JSON', '{clientID: demo'],
    ['a JSON list', '[]'],
    ['no secret', JSON.stringify({ clientID: 'demo-client' })],
    ['a numeric client id', JSON.stringify({ clientID: 7, secret: 'demo-secret' })],
  ])('answers 400 to a body that is %s', async (_name, body) => {
    const s = await sim();
    const a = await post(s, TOKEN_PATH, body);
    expect(a.status).toBe(400);
    expect(a.body).toMatchObject({ code: 400 });
  });

  it('answers 405 to a GET of the token endpoint', async () => {
    const s = await sim();
    const a = await get(s, TOKEN_PATH);
    expect(a.status).toBe(405);
    expect(a.headers.get('allow')).toBe('POST');
  });

  it('tolerates a token request without a Content-Type header', async () => {
    const s = await sim();
    const res = await fetch(`${s.url}${TOKEN_PATH}`, {
      method: 'POST',
      body: Buffer.from(JSON.stringify({ clientID: 'demo-client', secret: 'demo-secret' })),
    });
    expect(res.status).toBe(200);
  });
});

describe('bearer check on v2 endpoints', () => {
  it.each([
    ['no Authorization header', undefined],
    ['a token it never issued', 'Bearer not-a-token'],
    ['a token without the Bearer scheme', 'RAW'],
  ])('answers 401 code 401001 with %s', async (_name, header) => {
    const s = await sim();
    const token = await fetchToken(s);
    const res = await fetch(`${s.url}${LICENSE}`, {
      headers: header === undefined ? {} : { Authorization: header === 'RAW' ? token : header },
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ code: 401001, message: 'Invalid token' });
  });

  it('serves a v2 endpoint with an issued token, with or without a Content-Type', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    expect((await get(s, LICENSE, token)).status).toBe(200);
    const res = await fetch(`${s.url}${LICENSE}`, { headers: { Authorization: `bearer ${token}` } });
    expect(res.status).toBe(200);
  });

  it('answers 405 to a POST on a v2 endpoint', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const a = await post(s, LICENSE, {}, { Authorization: `Bearer ${token}` });
    expect(a.status).toBe(405);
  });
});
