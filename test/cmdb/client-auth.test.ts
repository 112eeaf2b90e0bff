/** Token flow against the simulator: reuse, re-auth after expiry (single-flight), pre-issued tokens. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { Agent } from 'undici';
import { FetchedToken, TAKEN_RENEWALS } from '../../src/cmdb/auth.js';
import { POLL_TOKEN_RENEWALS } from '../../src/cmdb/client.js';
import { Transport } from '../../src/cmdb/transport.js';
import { RoadEvents } from '../../src/cmdb/events.js';
import { realClock } from '../../src/cmdb/clock.js';
import { CmdbTokensTakenError, CmdbUnauthorizedError } from '../../src/errors.js';
import { FakeClock } from './helpers/clock.js';
import type { Simulator } from '../../src/simulator/api.js';
import { makeClient, rejection } from './helpers/client.js';
import { captureLog } from './helpers/log.js';
import { testMetrics } from './helpers/metrics.js';
import { sendJson, startLocal, tokenAndLicense, type LocalServer } from './helpers/server.js';
import { requestsTo, sim, simStack } from './helpers/sim.js';
import { testStack } from './helpers/stack.js';

const locals: LocalServer[] = [];
let tmp: string | undefined;
afterEach(async () => {
  await Promise.all(locals.splice(0).map((s) => s.close()));
  if (tmp) await rm(tmp, { recursive: true, force: true });
  tmp = undefined;
});

/** A token straight from the simulator, to use as a pre-issued one. */
async function issueToken(s: Simulator): Promise<string> {
  const res = await request(`${s.url}/CMDB/v1/access_token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientID: s.clientId, secret: s.secret }),
  });
  const body = (await res.body.json()) as { data: { token: string } };
  return body.data.token;
}

describe('fetched token', () => {
  it('fetches one token and reuses it for every request while it is accepted', async () => {
    const s = await sim();
    const { client, metrics } = makeClient(simStack(s));
    await client.get('license');
    await client.get('metrics_data');
    await client.get('data_ingestion_next');
    expect(requestsTo(s, 'access_token')).toHaveLength(1);
    const [token] = s.issuedTokens();
    const data = s.requests().filter((r) => r.endpoint !== 'access_token');
    expect(data.map((r) => r.headers.authorization)).toEqual(Array(3).fill(`Bearer ${token}`));
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'success' })).toBe(1);
    expect(await metrics.outcomes('access_token')).toEqual({ '200': 1 });
  });

  it('after the token expires, N parallel requests share exactly one new token fetch', async () => {
    let now = Date.parse('2025-06-01T00:00:00Z');
    const s = await sim({ now: () => now });
    s.setTokenExpiry({ afterSeconds: 60 });
    const { client, metrics } = makeClient(simStack(s, { maxConcurrency: 8 }));
    await client.get('license');
    now += 120_000;
    const results = await Promise.all(Array.from({ length: 6 }, () => client.get('license')));
    expect(results).toHaveLength(6);
    expect(requestsTo(s, 'access_token')).toHaveLength(2);
    expect(s.issuedTokens()).toHaveLength(2);
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'success' })).toBe(2);
    expect(await metrics.outcomes('license')).toEqual({ '200': 7, '401': 6 });
    // Every retry used the new token.
    const newest = s.issuedTokens()[1];
    const retried = requestsTo(s, 'license').filter((r) => r.status === 200).slice(1);
    expect(retried.every((r) => r.headers.authorization === `Bearer ${newest}`)).toBe(true);
  });

  it('a 401 on every token just granted is a token taken by another client, renewed with back-off a few times: CmdbTokensTakenError, not rejected credentials', async () => {
    let issued = 0;
    const s = await startLocal((req, res) => {
      if (req.url === '/CMDB/v1/access_token') sendJson(res, 200, { code: 200, data: { token: `taken-token-${++issued}` } });
      else sendJson(res, 401, { message: 'no' });
    });
    locals.push(s);
    const clock = new FakeClock();
    const { client, cmdb, log } = makeClient(testStack({ baseUrl: s.url }), { clock, random: () => 0.5 });
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTokensTakenError);
    expect(err.message).toContain('GET /CMDB/v2/system/metrics/license: 401 Unauthorized on 5 new tokens in a row');
    expect(err.message).toContain('another process with the same client id takes them');
    // The first token, the one renewal at once, then four more after 1, 2, 4 and 8 s (jittered to 3/4 here).
    expect(s.seen.filter((r) => r.url === '/CMDB/v1/access_token')).toHaveLength(1 + TAKEN_RENEWALS);
    expect(s.seen.filter((r) => r.url === '/CMDB/v2/system/metrics/license')).toHaveLength(1 + TAKEN_RENEWALS);
    expect(clock.sleeps).toEqual([750, 1500, 3000, 6000]);
    expect(cmdb.unauthorized).toBe(false);
    expect(log.text()).not.toMatch(/rejected/i);
    // Said once, with what ends it.
    const said = log.lines().filter((l) => String(l.msg).includes('had just granted'));
    expect(said).toHaveLength(1);
    expect(said[0]?.msg).toContain('give each one of its own');
  });

  it('with the daemon\'s renewals per request, an endpoint that answers 401 to every token fails within its poll (one renewal at once, one after a back-off), says so once, and the other endpoints go on with the token', async () => {
    let issued = 0;
    const s = await startLocal((req, res) => {
      if (req.url === '/CMDB/v1/access_token') sendJson(res, 200, { code: 200, data: { token: `token-${++issued}` } });
      else if (req.url?.startsWith('/CMDB/v2/system/metrics/data')) sendJson(res, 401, { message: 'no' });
      else sendJson(res, 200, { licenseType: 'FULL', expireDate: '2030-01-01', customerName: 'ACME' });
    });
    locals.push(s);
    const clock = new FakeClock();
    const { client, cmdb, log } = makeClient(testStack({ baseUrl: s.url }), { clock, random: () => 0.5, tokenRenewalsPerRequest: POLL_TOKEN_RENEWALS });
    for (let poll = 0; poll < 3; poll++) {
      const err = await rejection(client.get('metrics_data'));
      expect(err).toBeInstanceOf(CmdbUnauthorizedError);
      expect(err).not.toBeInstanceOf(CmdbTokensTakenError);
      expect(err.message).toContain('401 Unauthorized, also on the 2 new tokens asked for after it');
      expect(err.message).toContain('the CMDB refuses this request to the client, or another process with the same client id takes the tokens');
      // Another endpoint succeeds with the token: the streak starts again at the next poll.
      await client.get('license');
    }
    // Per poll: the token in use, one renewal at once and one after the first back-off (1 s jittered to 3/4).
    expect(s.seen.filter((r) => r.url === '/CMDB/v2/system/metrics/data')).toHaveLength(3 * 3);
    expect(s.seen.filter((r) => r.url === '/CMDB/v1/access_token')).toHaveLength(1 + 3 * 2);
    expect(clock.sleeps).toEqual([750, 750, 750]);
    expect(cmdb.unauthorized).toBe(false);
    // Said once, not once per poll.
    expect(log.lines().filter((l) => String(l.msg).includes('had just granted'))).toHaveLength(1);
  });

  it('two clients of one client id against a CMDB that keeps one token per client: each takes the other\'s token, and every request succeeds', async () => {
    const s = await sim({ oneTokenPerClient: true });
    const a = makeClient(simStack(s), { clock: new FakeClock() });
    const b = makeClient(simStack(s), { clock: new FakeClock() });
    for (let i = 0; i < 4; i++) {
      await a.client.get('license');
      await b.client.get('license');
    }
    const [x, y] = await Promise.all([a.client.get('metrics_data'), b.client.get('metrics_data')]);
    expect([x, y].every((v) => v !== undefined)).toBe(true);
    // Each request after the other client's token request met a taken token, and got a new one.
    expect(requestsTo(s, 'license').filter((r) => r.status === 401)).toHaveLength(6);
    expect(requestsTo(s, 'license').filter((r) => r.status === 200)).toHaveLength(8);
  });

  it('a request that failed with an older token retries with the current one, without a new fetch', async () => {
    const s = await startLocal(tokenAndLicense());
    locals.push(s);
    const stack = testStack({ baseUrl: s.url });
    const { instruments } = testMetrics();
    const { logger, scrubber } = captureLog();
    const dispatcher = new Agent();
    try {
      const transport = new Transport({ stack, ratePerMinute: stack.rateLimitPerMinute, logger, dispatcher, clock: realClock, random: Math.random, events: new RoadEvents(), onWait: () => undefined });
      const auth = stack.auth.kind === 'client' ? stack.auth : undefined;
      if (!auth) throw new Error('client auth expected');
      const tokens = new FetchedToken(auth, { settings: () => stack, transport, instruments, scrubber, lifetime: new AbortController().signal });
      const first = await tokens.current();
      const second = await tokens.renew(first);
      const again = await tokens.renew(first);
      expect(second?.token).not.toBe(first.token);
      expect(again).toBe(second);
      expect(s.seen.filter((r) => r.url === '/CMDB/v1/access_token')).toHaveLength(2);
    } finally {
      await dispatcher.close();
    }
  });

  it('scrubs the current and the previous token only: the scrubber does not grow with every renewal', async () => {
    const s = await sim();
    s.setTokenExpiry({ afterRequests: 1 });
    const { client, log } = makeClient(simStack(s));
    const before = log.scrubber.size;
    for (let i = 0; i < 8; i++) await client.get('license');
    const tokens = s.issuedTokens();
    expect(tokens.length).toBeGreaterThanOrEqual(8);
    expect(log.scrubber.size).toBe(before + 2);
    const [latest, previous] = [tokens.at(-1), tokens.at(-2)];
    expect(log.scrubber.scrub(`${latest} ${previous}`)).toBe('[REDACTED] [REDACTED]');
    expect(log.scrubber.scrub(`${tokens[0]}`)).toBe(`${tokens[0]}`);
  });

  it('registers every fetched token with the scrubber', async () => {
    const s = await sim();
    const { client, log } = makeClient(simStack(s));
    await client.get('license');
    const [token] = s.issuedTokens();
    expect(log.scrubber.scrub(`x ${token} y`)).toBe('x [REDACTED] y');
    expect(log.scrubber.scrub(s.secret)).toBe('[REDACTED]');
  });
});

describe('pre-issued token', () => {
  it('is sent as is and never fetched', async () => {
    const s = await sim();
    const token = await issueToken(s);
    s.clearRequests();
    const { client } = makeClient(simStack(s, { auth: { kind: 'token', token } }));
    await client.get('license');
    expect(requestsTo(s, 'access_token')).toHaveLength(0);
    expect(requestsTo(s, 'license')[0]?.headers.authorization).toBe(`Bearer ${token}`);
  });

  it('on 401 without tokenFile: CmdbUnauthorizedError, unauthorized set, one error log per transition', async () => {
    const s = await sim();
    const token = await issueToken(s);
    s.setTokenExpiry({ afterRequests: 1 });
    s.clearRequests();
    const { client, cmdb, log } = makeClient(simStack(s, { auth: { kind: 'token', token } }));
    await client.get('license');
    expect(cmdb.unauthorized).toBe(false);
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbUnauthorizedError);
    expect(err.message).toBe('GET /CMDB/v2/system/metrics/license: 401 Unauthorized (the token is not accepted)');
    expect(cmdb.unauthorized).toBe(true);
    await rejection(client.get('metrics_data'));
    expect(requestsTo(s, 'license')).toHaveLength(2); // no retry without a new token
    const errors = log.lines().filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]?.msg).toMatch(/rejects the pre-issued token/);
    expect(log.text()).not.toContain(token);
  });

  it('on 401 re-reads tokenFile, retries once with a rotated token and clears unauthorized', async () => {
    const s = await sim();
    tmp = await mkdtemp(join(tmpdir(), 'cmdb-token-'));
    const file = join(tmp, 'token');
    const oldToken = await issueToken(s);
    await writeFile(file, `${oldToken}\n`);
    s.setTokenExpiry({ afterRequests: 1 });
    const { client, cmdb } = makeClient(simStack(s, { auth: { kind: 'token', token: oldToken, tokenFile: file } }));
    await client.get('license');
    // Unchanged file: the 401 stands.
    await expect(client.get('license')).rejects.toBeInstanceOf(CmdbUnauthorizedError);
    expect(cmdb.unauthorized).toBe(true);
    const rotated = await issueToken(s);
    await writeFile(file, `${rotated}\n`);
    s.clearRequests();
    await expect(client.get('license')).resolves.toBeDefined();
    expect(cmdb.unauthorized).toBe(false);
    expect(requestsTo(s, 'license').map((r) => [r.status, r.headers.authorization])).toEqual([
      [401, `Bearer ${oldToken}`],
      [200, `Bearer ${rotated}`],
    ]);
  });

  it('logs the rejection again only after a success in between (once per transition)', async () => {
    const s = await sim();
    tmp = await mkdtemp(join(tmpdir(), 'cmdb-token-'));
    const file = join(tmp, 'token');
    const first = await issueToken(s);
    await writeFile(file, first);
    s.setTokenExpiry({ afterRequests: 1 });
    const { client, cmdb, log } = makeClient(simStack(s, { auth: { kind: 'token', token: first, tokenFile: file } }));
    const errorLines = () => log.lines().filter((l) => l.level === 'error').length;
    await client.get('license');
    await rejection(client.get('license'));
    await rejection(client.get('license'));
    expect(errorLines()).toBe(1);
    await writeFile(file, await issueToken(s));
    await client.get('license'); // rotated: accepted once, clears the state
    expect(cmdb.unauthorized).toBe(false);
    await rejection(client.get('license'));
    expect(cmdb.unauthorized).toBe(true);
    expect(errorLines()).toBe(2);
  });
});
