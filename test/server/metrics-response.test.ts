/**
 * /metrics over real HTTP from a real snapshot store, its exposition and a prom-client registry: the content coding
 * follows Accept-Encoding's q-values, a gzip body decompresses to exactly the plain body, every
 * response states its Content-Length, scrapes share one response until a part changes, and a gzip
 * body is always the whole of the plain body it was made from, however the scrapes and changes interleave.
 */
import { gunzipSync } from 'node:zlib';
import { Gauge, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataEndpoint } from '../../src/api/endpoints.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import type { Sample } from '../../src/metrics/sample.js';
import { createHttpApp, listen, metricsHandler, type Listening } from '../../src/server/http.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { ScrapeResponses } from '../../src/exposition/responses.js';
import { registryFamilies } from '../../src/exposition/self-families.js';
import { TEXT_LINES } from '../../src/exposition/text-lines.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { captureLogger } from '../helpers/log.js';
import { rawGet, type RawResponse } from '../helpers/raw-http.js';

const SETTINGS = { intervalSeconds: 60, staleAfterSeconds: 180 };
const NOW = 1_800_000_000;

let server: Listening;
let store: SnapshotStore;
let clockMs = 0;
let selfRenders = 0;
let responses: ScrapeResponses;
let registry: Registry;

const connectors = (n: number, value: number): Sample[] =>
  Array.from({ length: n }, (_, i) => ({
    name: 'cmdb_connector_input_records',
    // Non-ASCII text: Content-Length must count bytes, not characters.
    labels: { connector: `Zürich-连接器-${i}`, profile: 'p' },
    value,
  }));

beforeAll(async () => {
  registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: true });
  const { logger } = captureLogger('info');
  store = new SnapshotStore({ instruments, logger, renderer: TEXT_LINES });
  store.addStack('s1', new Map<DataEndpoint, typeof SETTINGS>([['connector', SETTINGS], ['license', SETTINGS]]), 100_000);
  await store.succeed('s1', 'connector', connectors(3000, 1), NOW);
  await store.succeed('s1', 'license', [{ name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: NOW + 86_400 * 10 }], NOW);
  responses = new ScrapeResponses({
    source: new Exposition(store),
    selfFamilies: () => {
      selfRenders++;
      return registryFamilies(registry);
    },
    now: () => NOW,
    monotonicMs: () => clockMs,
  });
  const metrics = () => responses.current();
  const app = createHttpApp({
    metrics,
    readiness: () => ({ ready: true, pending: [] }),
    landing: () => ({ version: 'test', ready: true, now: NOW, stacks: [] }),
    logger,
  });
  // As app.ts does: GET /metrics straight from node:http, the rest through express.
  server = await listen(app, '127.0.0.1', 0, { metrics: { path: '/metrics', handler: metricsHandler(metrics), logger } });
});

afterAll(async () => {
  await server?.close();
});

/** GET with exactly the Accept-Encoding given (none when undefined). */
function get(acceptEncoding: string | undefined): Promise<RawResponse> {
  return rawGet(`${server.url}/metrics`, acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding });
}

describe('content coding by Accept-Encoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['x-gzip', 'identity'],
    ['gzip;q=0', 'identity'],
    ['gzip;q=0.000', 'identity'],
    ['identity', 'identity'],
    ['*', 'gzip'],
    ['*;q=0.1', 'gzip'],
    ['deflate', 'identity'],
    ['deflate, gzip;q=0.5', 'gzip'],
    ['gzip, deflate, br', 'gzip'],
    ['identity;q=1, gzip;q=0.5', 'identity'],
    ['gzip;q=0, *', 'identity'],
    ['br;q=1, *;q=0.1', 'gzip'],
    ['gzip, identity;q=0', 'gzip'],
    // Refuses both: identity anyway (a 406 would only lose the scrape).
    ['identity;q=0', 'identity'],
    ['*;q=0', 'identity'],
  ])('Accept-Encoding %j is answered with %s, decoding to exactly the plain body', async (header, coding) => {
    const plain = await get(undefined);
    const res = await get(header);
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe(String(res.body.length));
    expect(res.headers.vary).toBe('Accept, Accept-Encoding');
    if (coding === 'identity') {
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.body.equals(plain.body)).toBe(true);
    } else {
      expect(res.headers['content-encoding']).toBe(coding);
      expect(gunzipSync(res.body).equals(plain.body)).toBe(true);
    }
  });

  it('the plain body holds the CMDB data, cmdb_license_days_until_expiry in its place, and the self metrics', async () => {
    const text = (await get(undefined)).body.toString('utf8');
    expect(text).toContain('cmdb_connector_input_records{stack="s1",connector="Zürich-连接器-0",profile="p"} 1\n');
    expect(text.indexOf('cmdb_license_expiry_timestamp_seconds')).toBeLessThan(text.indexOf('cmdb_license_days_until_expiry{stack="s1"} 10\n'));
    expect(text.indexOf('cmdb_license_days_until_expiry')).toBeLessThan(text.indexOf('cmdb_connector_input_records'));
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  it('the gzip body is one gzip stream (browsers decode only a first member)', async () => {
    const body = (await get('gzip')).body;
    let headers = 0;
    for (let i = 0; i + 3 < body.length; i++) if (body[i] === 0x1f && body[i + 1] === 0x8b && body[i + 2] === 0x08 && body[i + 3] === 0x00) headers++;
    expect(headers).toBe(1);
    expect(gunzipSync(body).toString('utf8')).toContain('cmdb_endpoint_up{stack="s1",endpoint="connector"} 1');
  });
});

describe('the rest of the server', () => {
  it('other paths and HEAD /metrics still go through express', async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const head = await fetch(`${server.url}/metrics`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect((await fetch(`${server.url}/metrics?x=1`)).status).toBe(200);
    expect((await fetch(`${server.url}/nope`)).status).toBe(404);
  });
});

describe('one response shared until a part changes', () => {
  it('concurrent scrapes get the same bytes from one render of the self metrics', async () => {
    clockMs += 10_000;
    const before = selfRenders;
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => get(i % 2 ? 'gzip' : undefined)));
    expect(selfRenders - before).toBe(1);
    const plain = answers.filter((a) => a.headers['content-encoding'] === undefined).map((a) => a.body);
    const zipped = answers.filter((a) => a.headers['content-encoding'] === 'gzip').map((a) => a.body);
    for (const p of plain) expect(p.equals(plain[0] as Buffer)).toBe(true);
    for (const z of zipped) expect(z.equals(zipped[0] as Buffer)).toBe(true);
  });

  it('self metrics are rendered again once older than 1 s, not before', async () => {
    clockMs += 10_000;
    await get(undefined);
    const before = selfRenders;
    clockMs += 999;
    await get('gzip');
    expect(selfRenders).toBe(before);
    clockMs += 2;
    await get('gzip');
    expect(selfRenders).toBe(before + 1);
  });

  it('a change of the self metrics a scrape must see at once (a reload) renders them on the next scrape', async () => {
    clockMs += 10_000;
    await get(undefined);
    const before = selfRenders;
    responses.selfMetricsChanged();
    await get(undefined);
    expect(selfRenders).toBe(before + 1);
    await get(undefined);
    expect(selfRenders).toBe(before + 1);
  });

  it('a completed poll is in the very next scrape, in both encodings', async () => {
    await store.succeed('s1', 'connector', connectors(3000, 7), NOW + 60);
    const plain = (await get(undefined)).body.toString('utf8');
    const zipped = gunzipSync((await get('gzip')).body).toString('utf8');
    for (const text of [plain, zipped]) {
      expect(text).toContain('cmdb_connector_input_records{stack="s1",connector="Zürich-连接器-2999",profile="p"} 7\n');
      expect(text).not.toMatch(/^cmdb_connector_input_records\{.*\} 1$/m);
    }
  });
});

describe('a body over 1 MiB', () => {
  it('is written part by part with the same Content-Length and bytes, plain and gzip', async () => {
    await store.succeed('s1', 'connector', connectors(20_000, 3), NOW + 120);
    const plain = await get(undefined);
    expect(plain.body.length).toBeGreaterThan(1024 * 1024);
    expect(plain.headers['content-length']).toBe(String(plain.body.length));
    expect(plain.body.toString('utf8')).toContain('connector="Zürich-连接器-19999",profile="p"} 3\n');
    const zipped = await get('gzip');
    expect(zipped.headers['content-length']).toBe(String(zipped.body.length));
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
  });
});

const whole = (b: { parts: readonly Buffer[] }) => Buffer.concat(b.parts);

describe('a gzip scrape while its body is being compressed', () => {
  it('waits for that one compression; a change meanwhile makes a new body, and each gzip is its own plain body whole', async () => {
    const generation = new Gauge({ name: 'test_body_generation', help: 'Which body this is.', registers: [registry] });
    generation.set(1);
    responses.selfMetricsChanged();
    const first = await responses.current();
    const zipping = first.gzip();
    // A second gzip scrape of the same body gets the same compression, not one of its own.
    expect(first.gzip()).toBe(zipping);
    generation.set(2);
    responses.selfMetricsChanged();
    const second = await responses.current();
    expect(second).not.toBe(first);
    const [a, b] = await Promise.all([zipping, second.gzip()]);
    expect(whole(first.plain).toString('utf8')).toContain('test_body_generation 1\n');
    expect(whole(second.plain).toString('utf8')).toContain('test_body_generation 2\n');
    expect(gunzipSync(whole(a)).equals(whole(first.plain))).toBe(true);
    expect(gunzipSync(whole(b)).equals(whole(second.plain))).toBe(true);
    registry.removeSingleMetric('test_body_generation');
  });
});

describe('a scrape while a large poll is being applied', () => {
  it('gets the previous response at once, and the new one once the poll is complete', async () => {
    const plainText = async () => whole((await responses.current()).plain).toString('utf8');
    // 20,000 series: prepared in slices over many turns of the event loop.
    const applied = store.succeed('s1', 'connector', connectors(20_000, 9), NOW + 180);
    let complete = false;
    void applied.then(() => (complete = true));
    const response = await responses.current();
    const zipped = response.gzip();
    const during = whole(response.plain).toString('utf8');
    expect(complete).toBe(false);
    expect(during).toContain('connector="Zürich-连接器-19999",profile="p"} 3\n');
    expect(during).not.toMatch(/^cmdb_connector_input_records\{.*\} 9$/m);
    // Its gzip is that body's, whether the poll completed while it was compressed or not.
    expect(gunzipSync(whole(await zipped)).toString('utf8')).toBe(during);
    await applied;
    const after = await plainText();
    expect(after).toContain('connector="Zürich-连接器-19999",profile="p"} 9\n');
    expect(after).not.toMatch(/^cmdb_connector_input_records\{.*\} 3$/m);
  });
});
