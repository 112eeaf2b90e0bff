import { describe, expect, it } from 'vitest';
import { PATHS, TOKEN_PATH } from '../../src/api/endpoints.js';
import { ConfigError } from '../../src/errors.js';
import { fetchToken, get, post, sim } from './helpers.js';

const LICENSE = PATHS.license()[0] as string;
const CONNECTOR = PATHS.connector()[0] as string;

describe('token expiry', () => {
  it('rejects a token after N authorised requests until a new one is fetched', async () => {
    const s = await sim();
    const old = await fetchToken(s);
    s.setTokenExpiry({ afterRequests: 2 });
    expect((await get(s, LICENSE, old)).status).toBe(200);
    expect((await get(s, LICENSE, old)).status).toBe(200);
    const expired = await get(s, LICENSE, old);
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ code: 401001, message: 'Invalid token' });
    const fresh = await fetchToken(s);
    expect((await get(s, LICENSE, fresh)).status).toBe(200);
    expect((await get(s, LICENSE, old)).status).toBe(401);
  });

  it('rejects a token S seconds after it was issued, on the simulated clock', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.setTokenExpiry({ afterSeconds: 30 });
    s.scenario.advance(29);
    expect((await get(s, LICENSE, token)).status).toBe(200);
    s.scenario.advance(1);
    expect((await get(s, LICENSE, token)).status).toBe(401);
    expect((await get(s, LICENSE, await fetchToken(s))).status).toBe(200);
  });

  it('stops expiring tokens once the policy is cleared, but an expired token stays expired', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.setTokenExpiry({ afterRequests: 0 });
    expect((await get(s, LICENSE, token)).status).toBe(401);
    const next = await fetchToken(s);
    s.setTokenExpiry(undefined);
    for (let i = 0; i < 3; i++) expect((await get(s, LICENSE, next)).status).toBe(200);
    expect((await get(s, LICENSE, token)).status).toBe(401);
  });

  it('rejects a negative limit', async () => {
    const s = await sim();
    expect(() => s.setTokenExpiry({ afterRequests: -1 })).toThrow(ConfigError);
  });
});

describe('one token per client', () => {
  it('ends every earlier token when a new one is issued, as a service that keeps one token per client id does', async () => {
    const s = await sim({ oneTokenPerClient: true });
    const first = await fetchToken(s);
    expect((await get(s, LICENSE, first)).status).toBe(200);
    const second = await fetchToken(s);
    const taken = await get(s, LICENSE, first);
    expect(taken.status).toBe(401);
    expect(taken.body).toEqual({ code: 401001, message: 'Invalid token' });
    expect((await get(s, LICENSE, second)).status).toBe(200);
  });

  it('keeps every token valid by default', async () => {
    const s = await sim();
    const first = await fetchToken(s);
    await fetchToken(s);
    expect((await get(s, LICENSE, first)).status).toBe(200);
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After above N requests a minute, token endpoint included', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.setRateLimit({ perMinute: 3, retryAfter: true });
    expect((await post(s, TOKEN_PATH, { clientID: s.clientId, secret: s.secret })).status).toBe(200);
    expect((await get(s, LICENSE, token)).status).toBe(200);
    expect((await get(s, CONNECTOR, token)).status).toBe(200);
    const limited = await get(s, LICENSE, token);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect((await post(s, TOKEN_PATH, { clientID: s.clientId, secret: s.secret })).status).toBe(429);
  });

  it('answers 429 without Retry-After when asked to', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.setRateLimit({ perMinute: 1, retryAfter: false });
    expect((await get(s, LICENSE, token)).status).toBe(200);
    const limited = await get(s, LICENSE, token);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBeNull();
  });

  it('admits requests again once the rolling minute has passed, and Retry-After counts down', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.setRateLimit({ perMinute: 1, retryAfter: true });
    expect((await get(s, LICENSE, token)).status).toBe(200);
    s.scenario.advance(45);
    const limited = await get(s, LICENSE, token);
    expect(limited.headers.get('retry-after')).toBe('15');
    s.scenario.advance(15);
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it('lifts the limit when cleared', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.setRateLimit({ perMinute: 0, retryAfter: false });
    expect((await get(s, LICENSE, token)).status).toBe(429);
    s.setRateLimit(undefined);
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });
});

describe('forbid', () => {
  it('answers 403 on the chosen endpoints only, and forbid([]) lifts it', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.forbid(['license', 'connector']);
    const a = await get(s, LICENSE, token);
    expect(a.status).toBe(403);
    expect(a.body).toMatchObject({ code: 403 });
    expect((await get(s, CONNECTOR, token)).status).toBe(403);
    expect((await get(s, PATHS.metrics_data()[0] as string, token)).status).toBe(200);
    s.forbid([]);
    expect((await get(s, LICENSE, token)).status).toBe(200);
  });

  it('still asks for a valid token first (401 before 403)', async () => {
    const s = await sim();
    s.forbid(['license']);
    expect((await get(s, LICENSE)).status).toBe(401);
  });
});
