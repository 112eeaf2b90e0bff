/**
 * Transport behaviour that needs control over the socket: bodies without Content-Length, a pooled
 * keep-alive socket the server closes, the in-flight cap, and the proxy dispatchers.
 */
import { connect, type Socket } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RECORD_MAX_BYTES } from '../../src/cmdb/body.js';
import { createDispatcher } from '../../src/cmdb/dispatcher.js';
import { CmdbNetworkError, CmdbTooLargeError } from '../../src/errors.js';
import { notYet, waitFor } from '../helpers/wait.js';
import { makeClient, rejection } from './helpers/client.js';
import { sendJson, startLocal, type LocalServer } from './helpers/server.js';
import { testStack } from './helpers/stack.js';

const TOKEN_AUTH = { kind: 'token', token: 'pre-issued-token-1' } as const;
const LICENSE = { licenseType: 'FULL', expireDate: '2030-01-01', customerName: 'ACME' };
const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function local(...args: Parameters<typeof startLocal>): Promise<LocalServer> {
  const s = await startLocal(...args);
  servers.push(s);
  return s;
}

describe('response size cap without Content-Length', () => {
  it('counts streamed bytes and aborts past maxResponseBytes with too_large', async () => {
    const s = await local((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no content-length
      res.write(`{"licenseType":"${'x'.repeat(3000)}`);
      res.write(`${'y'.repeat(3000)}"}`);
      res.end();
    });
    const { client, metrics } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxResponseBytes: 4096 }));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTooLargeError);
    expect(err.message).toBe(
      'GET /CMDB/v2/system/metrics/license: response larger than the 4096-byte cap (maxResponseBytes)',
    );
    expect(await metrics.outcomes('license')).toEqual({ too_large: 1 });
    expect(s.seen).toHaveLength(1); // not retried
  });

  it('accepts a streamed body of exactly the cap', async () => {
    const body = JSON.stringify({ ...LICENSE, customerName: 'z'.repeat(100) });
    const s = await local((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const { client } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxResponseBytes: Buffer.byteLength(body) }));
    await expect(client.get('license')).resolves.toMatchObject({ licenseType: 'FULL' });
  });
});

/**
 * A server that streams `bytes` of a JSON string (64 KiB writes, as fast as the socket takes them)
 * and counts what it managed to write before the client dropped the connection.
 */
async function streaming(bytes: number, declare: boolean) {
  const sent = { bytes: 0, closed: false };
  const chunk = Buffer.alloc(64 * 1024, 0x78);
  const s = await local((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', ...(declare ? { 'content-length': String(bytes) } : {}) });
    res.write('{"licenseType":"');
    sent.bytes = 16;
    res.on('close', () => (sent.closed = true));
    res.on('error', () => {});
    const pump = () => {
      while (!sent.closed && sent.bytes < bytes - 2) {
        const n = Math.min(chunk.length, bytes - 2 - sent.bytes);
        sent.bytes += n;
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
      }
      if (!sent.closed) res.end('"}');
    };
    pump();
  });
  return { s, sent };
}

const MiB = 1024 * 1024;
/** What loopback socket buffers may take in before the client's abort reaches the server. */
const SOCKET_SLACK = 16 * MiB;

describe('oversize bodies are dropped early (issue 11 #3)', () => {
  it('a declared Content-Length above the cap is refused before the body is read', async () => {
    const { s, sent } = await streaming(300 * MiB, true);
    const { client, metrics } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxResponseBytes: 4 * MiB }));
    const err = await rejection(client.get('actions'));
    expect(err).toBeInstanceOf(CmdbTooLargeError);
    expect(await metrics.value('cmdb_endpoint_response_bytes_total', { stack: 'test', endpoint: 'actions' })).toBe(0);
    await waitFor('the server saw the connection closed', () => sent.closed);
    expect(sent.bytes).toBeLessThan(SOCKET_SLACK);
  });

  it('a body without Content-Length is dropped as soon as the running total passes the cap', async () => {
    const { s, sent } = await streaming(300 * MiB, false);
    const { client } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxResponseBytes: 4 * MiB }));
    const err = await rejection(client.get('actions'));
    expect(err.message).toBe('GET /CMDB/v2/system/metrics/actions: response larger than the 4194304-byte cap (maxResponseBytes)');
    await waitFor('the server saw the connection closed', () => sent.closed);
    expect(sent.bytes).toBeLessThan(4 * MiB + SOCKET_SLACK);
  });

  it('a single-record endpoint (license) is refused past 1 MiB, whatever maxResponseBytes allows', async () => {
    const { s, sent } = await streaming(64 * MiB, false);
    const { client, metrics } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxResponseBytes: 256 * MiB }));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTooLargeError);
    expect(err.message).toBe(`GET /CMDB/v2/system/metrics/license: response larger than the ${RECORD_MAX_BYTES}-byte cap (single-record answers)`);
    expect(await metrics.outcomes('license')).toEqual({ too_large: 1 });
    await waitFor('the server saw the connection closed', () => sent.closed);
    expect(sent.bytes).toBeLessThan(RECORD_MAX_BYTES + SOCKET_SLACK);
  });
});

describe('paging against a server that does not page', () => {
  it('reads a list without last or totalPages as one page instead of asking for page 1, 2, …', async () => {
    const content = Array.from({ length: 5 }, (_, i) => ({ bridge_name: `c${i}`, status: 'Success' }));
    const s = await local((_req, res) => sendJson(res, 200, { content }));
    const { client } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, paging: { connectorPageSize: 2 } }));
    const rows = await client.get('connector');
    expect(rows.map((r) => r.bridge_name)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    expect(s.seen.map((r) => r.url)).toEqual(['/CMDB/v2/system/metrics/connector?page=0&size=2&sort=_time%2Cdesc']);
  });

  it('stops at an empty page even when the server claims more', async () => {
    const s = await local((req, res) => {
      const page = Number(new URL(req.url ?? '', 'http://x').searchParams.get('page'));
      sendJson(res, 200, { actions: page === 0 ? [{ actionId: 7 }] : [], last: false, totalPages: 50 });
    });
    const { client } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH }));
    const actions = await client.get('actions');
    expect(actions.map((a) => a.actionId)).toEqual(['7']);
    expect(s.seen).toHaveLength(2);
  });
});

describe('connection refused', () => {
  it('is a network error, retried retries.max times', async () => {
    const s = await local(() => {});
    const url = s.url;
    await s.close();
    const { client, metrics } = makeClient(testStack({ baseUrl: url, auth: TOKEN_AUTH, retries: { max: 2 } }));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbNetworkError);
    expect(err.message).toMatch(/^GET \/CMDB\/v2\/system\/metrics\/license: network error: ECONNREFUSED/);
    expect(await metrics.outcomes('license')).toEqual({ network: 3 });
  });
});

describe('keep-alive', () => {
  it('retries when the server closes a pooled keep-alive socket instead of answering', async () => {
    const used = new WeakSet<Socket>();
    const s = await local((req, res) => {
      // The second request on a socket finds it closed: what a server keep-alive timeout does.
      if (used.has(req.socket)) {
        req.socket.destroy();
        return;
      }
      used.add(req.socket);
      sendJson(res, 200, LICENSE);
    });
    // One connection, so the second request must reuse the pooled socket.
    const { client, metrics } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxConcurrency: 1 }));
    await client.get('license');
    await expect(client.get('license')).resolves.toMatchObject({ licenseType: 'FULL' });
    expect(await metrics.outcomes('license')).toEqual({ '200': 2, network: 1 });
    expect(s.seen).toHaveLength(3);
  });
});

describe('maxConcurrency', () => {
  it('never has more requests in flight than the cap', async () => {
    let inFlight = 0;
    let peak = 0;
    // The server answers only when the test lets it: one answer each time the cap is full (or
    // only the last request is left), so the peak does not depend on the machine's speed.
    const held: Array<() => void> = [];
    const s = await local((_req, res) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      held.push(() => {
        inFlight--;
        sendJson(res, 200, LICENSE);
      });
    });
    const { client } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxConcurrency: 2 }));
    const all = Promise.all(Array.from({ length: 8 }, () => client.get('license')));
    for (let answered = 0; answered < 8; answered++) {
      const full = Math.min(2, 8 - answered);
      await waitFor(`${full} requests in flight before answer ${answered + 1}`, () => held.length >= full || notYet(held.length), { intervalMs: 5 });
      expect(held.length, `requests in flight before answer ${answered + 1}`).toBe(full);
      held.shift()?.();
    }
    await all;
    expect(s.seen).toHaveLength(8);
    expect(peak).toBe(2);
  });
});

describe('post', () => {
  it('sends a JSON body with the token, the JSON headers and the same pipeline as a GET', async () => {
    const s = await local((_req, res) => sendJson(res, 200, LICENSE));
    const { cmdb, metrics } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH }));
    const answer = await cmdb.post({ endpoint: 'license', decode: (reply) => JSON.parse(reply.body.toString('utf8')) as unknown }, { table: 'asset', query: [[{ searchFieldName: 'OS', operator: '==', type: 'String', value: 'x' }]] });
    expect(answer).toEqual({ found: true, value: LICENSE });
    const [seen] = s.seen;
    expect(seen?.method).toBe('POST');
    expect(JSON.parse(seen?.body ?? '')).toEqual({ table: 'asset', query: [[{ searchFieldName: 'OS', operator: '==', type: 'String', value: 'x' }]] });
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.headers.authorization).toBe(`Bearer ${TOKEN_AUTH.token}`);
    expect(await metrics.outcomes('license')).toEqual({ '200': 1 });
  });
});

describe('after a pause', () => {
  it('the stack sends one request at a time until one is answered, then maxConcurrency again', async () => {
    let refused = false;
    let inFlight = 0;
    /** Requests in flight at the server when each request after the refusal arrived. */
    const arrivals: number[] = [];
    const held: Array<() => void> = [];
    const releaseAll = () => held.splice(0).forEach((send) => send());
    const s = await local((req, res) => {
      if (!refused) {
        refused = true;
        res.writeHead(429, { 'retry-after': '1' }).end();
        return;
      }
      arrivals.push(inFlight);
      inFlight++;
      const send = () => {
        inFlight--;
        sendJson(res, 200, LICENSE);
      };
      held.push(send);
      // Held until a second request is in flight beside it (the stack widened), or 3 s (it did not;
      // well within the attempt's timeout, so the client does not give up on it meanwhile).
      if (inFlight >= 2) releaseAll();
      else setTimeout(() => (held.includes(send) ? (held.splice(held.indexOf(send), 1), send()) : undefined), 3000);
    });
    const { client, cmdb } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, maxConcurrency: 4, timeoutSeconds: 30, retries: { max: 1, minDelaySeconds: 0.01, maxDelaySeconds: 0.05, maxRetryAfterSeconds: 5 } }));
    const first = client.get('license');
    // The first answer pauses the stack (its request retries after the pause); these wait for it too.
    await waitFor('the stack paused by the 429', () => cmdb.rateLimitPausedUntil() !== undefined);
    const rest = Array.from({ length: 4 }, () => client.get('license'));
    await Promise.all([first, ...rest]);
    // After the pause: the first request alone, and the next only once it was answered...
    expect(arrivals.slice(0, 2)).toEqual([0, 0]);
    // ...then more than one at a time again.
    expect(Math.max(...arrivals)).toBeGreaterThanOrEqual(1);
  });
});

/** A CONNECT proxy that records the authority it was asked for and tunnels to it. */
async function startProxy(): Promise<{ url: string; tunnels: string[]; close(): Promise<void> }> {
  const tunnels: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, client: Socket) => {
    tunnels.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const sock of [client, upstream]) {
      sockets.add(sock);
      sock.on('error', () => sock.destroy());
      sock.on('close', () => sockets.delete(sock));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const proxy = {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    close: () =>
      new Promise<void>((resolve) => {
        for (const sock of sockets) sock.destroy();
        server.close(() => resolve());
      }),
  };
  servers.push(proxy);
  return proxy;
}

describe('proxy', () => {
  it.each([
    ['HTTP_PROXY from env', (p: string) => [{}, { HTTP_PROXY: p }]],
    ['http_proxy from env', (p: string) => [{}, { http_proxy: p }]],
    ['explicit proxyUrl', (p: string) => [{ proxyUrl: p }, {}]],
  ] as const)('sends requests through the proxy given by %s', async (_n, setup) => {
    const s = await local((_req, res) => sendJson(res, 200, LICENSE));
    const proxy = await startProxy();
    const [stackExtra, env] = setup(proxy.url);
    const stack = testStack({ baseUrl: s.url, auth: TOKEN_AUTH, ...stackExtra });
    const dispatcher = createDispatcher(stack, env);
    try {
      const { client } = makeClient(stack, { dispatcher });
      await expect(client.get('license')).resolves.toMatchObject({ licenseType: 'FULL' });
      expect(proxy.tunnels).toEqual([`127.0.0.1:${s.port}`]);
      expect(s.seen).toHaveLength(1);
    } finally {
      await dispatcher.close();
    }
  });

  it('goes direct for a host listed in NO_PROXY', async () => {
    const s = await local((_req, res) => sendJson(res, 200, LICENSE));
    const proxy = await startProxy();
    const stack = testStack({ baseUrl: s.url, auth: TOKEN_AUTH });
    const dispatcher = createDispatcher(stack, { HTTP_PROXY: proxy.url, NO_PROXY: 'localhost,127.0.0.1' });
    try {
      const { client } = makeClient(stack, { dispatcher });
      await client.get('license');
      expect(proxy.tunnels).toEqual([]);
      expect(s.seen).toHaveLength(1);
    } finally {
      await dispatcher.close();
    }
  });
});
