/**
 * The bounds of the exporter's server: the cap on concurrent scrapes (--web.max-requests), the
 * connection cap derived from the open-files limit, and the timeouts applied in listen().
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { gzipSync } from 'node:zlib';
import { createHttpApp, listen, metricsHandler, type Listening } from '../../src/server/http.js';
import type { ScrapeBody, ScrapeResponse } from '../../src/exposition/responses.js';
import { defaultLimits, maxConnectionsFor, openFilesSoftLimit } from '../../src/server/limits.js';
import { buildProtection } from '../../src/server/protection.js';
import { createLogger } from '../../src/logger.js';
import { SecretScrubber } from '../../src/secrets.js';
import type { RefusalReason } from '../../src/server/auth.js';

const logger = createLogger({ level: 'silent', format: 'json', scrubber: new SecretScrubber() });
let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server whose /metrics answers only when `release()` is called: requests stay in flight until then. */
async function heldServer(maxRequests: number) {
  const refused: RefusalReason[] = [];
  const waiting: Array<() => void> = [];
  const protection = buildProtection({ limits: defaultLimits(maxRequests), refused: (r) => refused.push(r), logger, telemetryPath: '/metrics' });
  const plain = Buffer.from('up 1\n');
  const zipped = gzipSync(plain);
  const bodyOf = (b: Buffer): ScrapeBody => ({ parts: [b], length: b.length, whole: () => b });
  const response: ScrapeResponse = { plain: bodyOf(plain), gzip: () => Promise.resolve(bodyOf(zipped)) };
  const metrics = () => new Promise<ScrapeResponse>((resolve) => waiting.push(() => resolve(response)));
  const app = createHttpApp({
    metrics,
    readiness: () => ({ ready: true, pending: [] }),
    landing: () => ({ version: 'test', ready: true, now: 0, stacks: [] }),
    logger,
  });
  // As app.ts does: the cap applies to the /metrics fast path ahead of express.
  server = await listen(app, '127.0.0.1', 0, { protection, metrics: { path: '/metrics', handler: metricsHandler(metrics), logger } });
  const url = server.url;
  return {
    url,
    refused,
    inHandler: () => waiting.length,
    release: () => waiting.splice(0).forEach((resolve) => resolve()),
  };
}


describe('--web.max-requests', () => {
  it('answers 503 beyond the cap while the others are in flight, and serves again once they finished', async () => {
    const s = await heldServer(3);
    const held = [1, 2, 3].map(() => fetch(`${s.url}/metrics`));
    await waitFor('3 requests in the handler', () => s.inHandler() === 3);
    const refusedReply = await fetch(`${s.url}/metrics`);
    expect(refusedReply.status).toBe(503);
    expect(refusedReply.headers.get('retry-after')).toBe('1');
    expect(await refusedReply.text()).toMatch(/limit of 3 concurrent requests reached/);
    expect(s.refused).toEqual(['max_requests']);
    // Other paths are not capped.
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    s.release();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200, 200]);
    const again = fetch(`${s.url}/metrics`);
    await waitFor('1 request in the handler', () => s.inHandler() === 1);
    s.release();
    expect((await again).status).toBe(200);
  });

  it('0 means no limit', async () => {
    const s = await heldServer(0);
    const held = Array.from({ length: 50 }, () => fetch(`${s.url}/metrics`));
    await waitFor('50 requests in the handler', () => s.inHandler() === 50);
    s.release();
    expect((await Promise.all(held)).every((r) => r.status === 200)).toBe(true);
    expect(s.refused).toEqual([]);
  });

  it('a client that goes away frees its slot', async () => {
    const s = await heldServer(1);
    const controller = new AbortController();
    const gone = fetch(`${s.url}/metrics`, { signal: controller.signal }).catch(() => 'aborted');
    await waitFor('1 request in the handler', () => s.inHandler() === 1);
    controller.abort();
    expect(await gone).toBe('aborted');
    // The aborted request's handler is still waiting, but its slot is free: the next request
    // reaches the handler too instead of getting a 503 (retried until the server saw the abort).
    let next: Response | undefined;
    for (let i = 0; i < 50 && next === undefined; i++) {
      const attempt = fetch(`${s.url}/metrics`);
      await waitFor(`2 requests in the handler, or request ${i + 1} refused`, () => s.inHandler() === 2 || s.refused.length > i);
      if (s.inHandler() === 2) {
        s.release();
        next = await attempt;
      } else await attempt;
    }
    expect(next?.status).toBe(200);
  });
});

describe('the connection cap and timeouts', () => {
  it('reads the soft open-files limit from /proc/self/limits', () => {
    const limits = 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n';
    expect(openFilesSoftLimit(limits)).toBe(1024);
    expect(openFilesSoftLimit(limits.replace('1024   ', 'unlimited'))).toBe(1_048_576);
    expect(openFilesSoftLimit('garbage')).toBe(1024);
  });

  it('keeps a quarter of the descriptors (at least 256) for the CMDB client', () => {
    expect(maxConnectionsFor(1024)).toBe(768);
    expect(maxConnectionsFor(20_000)).toBe(15_000);
    expect(maxConnectionsFor(100)).toBe(32);
  });

  it('applies them to the listening server', async () => {
    const s = await heldServer(40);
    const limits = defaultLimits(40);
    const node = server?.server;
    expect(node?.maxConnections).toBe(limits.maxConnections);
    expect(node?.headersTimeout).toBe(limits.headersTimeoutMs);
    expect(node?.requestTimeout).toBe(limits.requestTimeoutMs);
    expect(node?.keepAliveTimeout).toBe(limits.keepAliveTimeoutMs);
    expect(node?.timeout).toBe(limits.socketTimeoutMs);
    expect(s.url).toMatch(/^http:/);
  });
});
