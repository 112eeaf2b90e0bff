import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import type { App } from '../../src/app.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { rawGet } from '../helpers/raw-http.js';

let sim: SimulatorServer;
let app: App;
let base: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3 });
  sim.addFault({ endpoint: 'license', status: 503 });
  ({ app } = await startExporter(configFor([stackFor(sim, { name: 'http' })]), { serve: true, schedule: false }));
  base = app.url as string;
});

afterAll(async () => {
  await app?.close(0);
  await sim?.close();
});

/** GET with an explicit Accept-Encoding (fetch would decode gzip by itself). */
const get = (path: string, headers: Record<string, string>) => rawGet(`${base}${path}`, headers);

describe('before the first poll', () => {
  it('/readyz answers 503 with the pending endpoints as JSON', async () => {
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(503);
    const body = (await res.json()) as { status: string; pending: Array<{ stack: string; endpoint: string }> };
    expect(body.status).toBe('starting');
    expect(body.pending).toContainEqual({ stack: 'http', endpoint: 'license' });
  });

  it('/healthz answers 200 at once', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});

describe('after a poll', () => {
  beforeAll(async () => {
    await app.pollOnce();
  });

  it('/readyz answers 200 once every endpoint finished a first poll, failed ones included', async () => {
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  it('/metrics sets the text format content type and no caching', async () => {
    const res = await get('/metrics', {});
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.toString()).toContain('cmdb_assets{stack="http"}');
  });

  it('/metrics is gzipped when asked, with the same content', async () => {
    const plain = await get('/metrics', {});
    const zipped = await get('/metrics', { 'Accept-Encoding': 'gzip, deflate' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.body.length).toBeLessThan(plain.body.length);
    const text = gunzipSync(zipped.body).toString();
    // Process metrics move between the two scrapes; the CMDB part must be identical.
    const cmdb = (t: string) => t.split('\n').filter((l) => l.startsWith('cmdb_assets') || l.startsWith('cmdb_connector_info'));
    expect(cmdb(text)).toEqual(cmdb(plain.body.toString()));
  });

  it('a scrape makes no request to the CMDB', async () => {
    const before = sim.requests().length;
    for (let i = 0; i < 5; i++) await (await fetch(`${base}/metrics`)).text();
    expect(sim.requests().length).toBe(before);
  });

  it('the landing page links the endpoints and shows the failing one with its outcome and a hint', async () => {
    const html = await (await fetch(`${base}/`)).text();
    for (const link of ['href="metrics"', 'href="healthz"', 'href="readyz"']) expect(html).toContain(link);
    const row = html.split('<tr').find((r) => r.includes('<td><code>license</code>')) ?? '';
    expect(row).toContain('failing');
    expect(row).toContain('503');
    expect(row).toContain('server error');
    expect(html).not.toContain(sim.secret);
    for (const token of sim.issuedTokens()) expect(html).not.toContain(token);
  });

  it('POST /-/reload is refused with 403 when not enabled', async () => {
    const res = await fetch(`${base}/-/reload`, { method: 'POST' });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('enableReload');
  });

  it('an unknown path answers 404 with the paths that exist', async () => {
    const res = await fetch(`${base}/nope`);
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('/metrics');
  });
});
