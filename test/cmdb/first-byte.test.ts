/**
 * The budget counts a request from when its first byte leaves (issue 37), not from when the budget
 * let it through: on a new connection that takes long to open (a loaded machine, a TLS handshake, a
 * lost SYN), a server counting arrivals sees the request that much later, and a window planned from
 * the earlier time let the 61st request of a minute reach it within 60 s of the first. Here every
 * connection takes 1.5 s to open (a connector that waits before it connects), so the first byte of
 * the first request leaves 1.5 s after it was let through; the request event, the budget's record
 * of what left and the window all say so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Agent, buildConnector } from 'undici';
import { WINDOW_MS } from '../../src/cmdb/budget.js';
import type { RequestEvent } from '../../src/cmdb/events.js';
import { withFirstByte } from '../../src/cmdb/first-byte.js';
import { makeClient } from './helpers/client.js';
import { sendJson, startLocal, type LocalServer } from './helpers/server.js';
import { testStack } from './helpers/stack.js';

const CONNECT_MS = 1500;
const TOKEN_AUTH = { kind: 'token', token: 'pre-issued-token-1' } as const;
const closing: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((c) => c.close()));
});

/** An Agent whose every connection opens CONNECT_MS late. */
function slowToConnect(): Agent {
  const connector = buildConnector({});
  const agent = new Agent({
    connect: (opts, callback) => {
      setTimeout(() => connector(opts, callback), CONNECT_MS);
    },
  });
  closing.push(agent);
  return agent;
}

/** The license, to the pre-issued token. */
async function local(): Promise<LocalServer> {
  const s = await startLocal((_req, res) => sendJson(res, 200, { licenseType: 'FULL', expireDate: '2030-01-01', customerName: 'ACME' }));
  closing.push(s);
  return s;
}

describe('the moment a request leaves', () => {
  it('is when its first byte is written, after its connection opened: the budget\'s window counts it from then', async () => {
    const s = await local();
    const { client, cmdb } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, rateLimitPerMinute: 60 }), { dispatcher: slowToConnect() });
    const events: RequestEvent[] = [];
    cmdb.events.requests.on((e) => events.push(e));
    const sends: number[] = [];
    cmdb.events.sends.on((e) => sends.push(e.sentAt));
    const before = Date.now();
    const startedMs = performance.now();
    await client.get('license');
    const tookMs = performance.now() - startedMs;
    const [event] = events;
    // Let through at once, written only once the connection opened: that is when it left.
    expect((event?.sentAt as number) - before).toBeGreaterThanOrEqual(CONNECT_MS);
    // What the window counts (and a reload hands on), and what a restart's record reads, is that time.
    expect(cmdb.budgetState().sendTimes).toEqual([event?.sentAt]);
    expect(sends).toEqual([event?.sentAt]);
    // Its duration runs from then: the connection's wait is not the CMDB's answer time. Of the whole
    // call, at least CONNECT_MS went to the connection (1 ms less: a timer may fire that early), so
    // the duration is at most the rest, whatever the machine's speed.
    expect((event?.durationSeconds as number) * 1000).toBeLessThanOrEqual(tookMs - CONNECT_MS + 1);
    expect(WINDOW_MS).toBeGreaterThan(60_000);
  });

  it('tells no send of a request whose connection never opened (the CMDB never saw it); the budget still counts it', async () => {
    const s = await local();
    const port = s.port;
    await s.close();
    closing.splice(closing.indexOf(s), 1);
    const { client, cmdb } = makeClient(testStack({ baseUrl: `http://127.0.0.1:${port}`, auth: TOKEN_AUTH, retries: { max: 0, minDelaySeconds: 0, maxDelaySeconds: 0, maxRetryAfterSeconds: 0 } }));
    const sends: number[] = [];
    cmdb.events.sends.on((e) => sends.push(e.sentAt));
    const events: RequestEvent[] = [];
    cmdb.events.requests.on((e) => events.push(e));
    await expect(client.get('license')).rejects.toThrow();
    expect(events.map((e) => e.outcome)).toEqual(['network']);
    expect(sends).toEqual([]);
    expect(cmdb.budgetState().sendTimes).toHaveLength(1);
  });

  it('withFirstByte tells only the requests that ask', async () => {
    const s = await local();
    const agent = withFirstByte(new Agent());
    closing.push(agent);
    const told: string[] = [];
    const ask = (path: string, onFirstByte?: () => void) => agent.request({ origin: s.url, path, method: 'GET', headers: { authorization: 'Bearer pre-issued-token-1' }, ...(onFirstByte ? { onFirstByte } : {}) } as Parameters<typeof agent.request>[0]);
    await (await ask('/CMDB/v2/system/metrics/license', () => told.push('asked'))).body.dump();
    await (await ask('/CMDB/v2/system/metrics/license')).body.dump();
    expect(told).toEqual(['asked']);
  });
});
