/** Redirects (same origin only) and TLS options, against the simulator. */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CmdbNetworkError, CmdbRedirectRefusedError, CmdbTimeoutError } from '../../src/errors.js';
import { makeClient, rejection } from './helpers/client.js';
import { FakeClock } from './helpers/clock.js';
import { sendJson, startLocal, type LocalServer } from './helpers/server.js';
import { requestsTo, sim, simStack } from './helpers/sim.js';

const LICENSE = '/CMDB/v2/system/metrics/license';
const others: LocalServer[] = [];
afterEach(async () => {
  await Promise.all(others.splice(0).map((s) => s.close()));
});

describe('redirects', () => {
  it.each([301, 302, 303, 307, 308])('follows a %i to the same origin, with the token, and logs it at debug', async (status) => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status, redirectTo: `${s.url}${LICENSE}?moved=1`, times: 1 });
    const { client, log, metrics } = makeClient(simStack(s));
    await expect(client.get('license')).resolves.toBeDefined();
    const hops = requestsTo(s, 'license');
    expect(hops.map((r) => [r.status, r.rawQuery])).toEqual([
      [status, ''],
      [200, 'moved=1'],
    ]);
    expect(hops.every((r) => r.headers.authorization?.startsWith('Bearer '))).toBe(true);
    expect(log.lines().find((l) => l.msg === 'followed redirect')).toMatchObject({ level: 'debug', status, endpoint: 'license' });
    // Two requests left the process: each is counted with its own status.
    expect(await metrics.outcomes('license')).toEqual({ [String(status)]: 1, '200': 1 });
  });

  it('follows a relative Location', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', redirectTo: LICENSE, times: 1 });
    const { client } = makeClient(simStack(s));
    await expect(client.get('license')).resolves.toBeDefined();
    expect(requestsTo(s, 'license')).toHaveLength(2);
  });

  it('refuses a redirect to another host: the Authorization header never reaches it', async () => {
    const other = await startLocal((_req, res) => sendJson(res, 200, { licenseType: 'STOLEN' }));
    others.push(other);
    const s = await sim();
    s.addFault({ endpoint: 'license', redirectTo: `${other.url}${LICENSE}`, times: 1 });
    const { client, metrics } = makeClient(simStack(s));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbRedirectRefusedError);
    expect(err.message).toBe(`GET ${LICENSE}: 302 redirect to another origin (${other.url}) refused`);
    expect(other.seen).toEqual([]);
    expect(requestsTo(s, 'license')).toHaveLength(1); // not retried
    expect(await metrics.outcomes('license')).toEqual({ redirect_refused: 1 });
  });

  it.each([
    ['another host name for the same port', (port: number) => `http://localhost:${port}${LICENSE}`],
    ['another scheme', (port: number) => `https://127.0.0.1:${port}${LICENSE}`],
    ['another port', () => `http://127.0.0.1:9${LICENSE}`],
  ])('treats %s as another origin', async (_n, target) => {
    const s = await sim();
    s.addFault({ endpoint: 'license', redirectTo: target(s.port), times: 1 });
    const { client } = makeClient(simStack(s));
    await expect(client.get('license')).rejects.toBeInstanceOf(CmdbRedirectRefusedError);
  });

  it('refuses the sixth redirect in a row', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', redirectTo: LICENSE });
    const { client } = makeClient(simStack(s));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbRedirectRefusedError);
    expect(err.message).toBe(`GET ${LICENSE}: more than 5 redirects`);
    expect(requestsTo(s, 'license')).toHaveLength(6);
  });

  it('counts every hop of a redirect loop and charges each to the request budget', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', redirectTo: LICENSE });
    const clock = new FakeClock(0);
    // 6 a minute: a burst of one, then one request every 10 s.
    const { client, metrics } = makeClient(simStack(s, { rateLimitPerMinute: 6 }), { clock });
    await rejection(client.get('license'));
    const sent = s.requests().length;
    expect(sent).toBe(7); // the token and six GETs
    expect(await metrics.outcomes('license')).toEqual({ '302': 5, redirect_refused: 1 });
    // Every request after the first waited its 10 s: the hops were charged like any request.
    expect(clock.now()).toBeGreaterThanOrEqual((sent - 1) * 10_000);
  });

  it('a hop whose deadline passes while it waits for the budget is neither sent nor counted', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', redirectTo: LICENSE });
    // Every budget wait outlasts the attempt's deadline (the slow wait is the fault): a real timer set
    // after the deadline's, for longer, fires after it whatever the machine's load. The deadline is
    // 3 s so that the first GET's answer comes before it on a loaded machine too.
    const TIMEOUT_SECONDS = 3;
    class SlowClock extends FakeClock {
      override async sleep(ms: number, signal?: AbortSignal): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, TIMEOUT_SECONDS * 1000 + 200));
        await super.sleep(ms, signal);
      }
    }
    const { client, metrics } = makeClient(simStack(s, { rateLimitPerMinute: 6, timeoutSeconds: TIMEOUT_SECONDS, retries: { max: 0 } }), { clock: new SlowClock(0) });
    expect(await rejection(client.get('license'))).toBeInstanceOf(CmdbTimeoutError);
    // The first GET left and was answered 302; the hop after it never left.
    expect(requestsTo(s, 'license')).toHaveLength(1);
    expect(await metrics.outcomes('license')).toEqual({ '302': 1 });
  });
});

describe('TLS', () => {
  let dir = '';
  let cert = '';
  let key = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cmdb-tls-'));
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ]);
    cert = await readFile(join(dir, 'cert.pem'), 'utf8');
    key = await readFile(join(dir, 'key.pem'), 'utf8');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('trusts a server certificate signed by tls.ca', async () => {
    const s = await sim({ tls: { cert, key } });
    expect(s.url).toMatch(/^https:/);
    const { client, log } = makeClient(simStack(s, { tls: { ca: cert } }));
    await expect(client.get('license')).resolves.toBeDefined();
    expect(requestsTo(s, 'license')).toHaveLength(1);
    expect(log.lines().filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('refuses an unknown certificate without tls.ca, and does not retry it', async () => {
    const s = await sim({ tls: { cert, key } });
    const { client, metrics } = makeClient(simStack(s));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbNetworkError);
    expect(err.message).toMatch(/^POST \/CMDB\/v1\/access_token: network error: /);
    expect(s.requests()).toEqual([]);
    expect(await metrics.outcomes('access_token')).toEqual({ network: 1 });
  });

  it('with insecureSkipVerify connects anyway and warns once at construction', async () => {
    const s = await sim({ tls: { cert, key } });
    const { client, log } = makeClient(simStack(s, { tls: { insecureSkipVerify: true } }));
    await client.get('license');
    await client.get('license');
    const warnings = log.lines().filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toMatch(/insecureSkipVerify/);
  });

  it('does not warn about insecureSkipVerify for an http:// base URL, which has no certificate', async () => {
    const s = await sim();
    const { client, log } = makeClient(simStack(s, { tls: { insecureSkipVerify: true } }));
    await client.get('license');
    expect(s.url).toMatch(/^http:/);
    expect(log.lines().filter((l) => l.level === 'warn')).toEqual([]);
  });
});
