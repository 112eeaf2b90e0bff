/**
 * One scrape target per stack: GET /metrics?stack=NAME, ?only=exporter and GET /sd on a running
 * exporter with three stacks polled from a real simulator.
 */
import bcrypt from 'bcryptjs';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { parseExternalUrl } from '../../src/config/scrape-base.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, type ParsedSample } from '../helpers/exposition.js';
import { rawGet } from '../helpers/raw-http.js';

let sim: SimulatorServer;
let app: App;
let base: string;
const STACKS = ['alpha', 'beta', 'gamma'];

beforeAll(async () => {
  sim = await startSimulator({ seed: 5 });
  ({ app } = await startExporter(configFor(STACKS.map((name) => stackFor(sim, { name }))), { serve: true, schedule: false, defaultMetrics: true }));
  base = app.url as string;
  await app.pollOnce();
});

afterAll(async () => {
  await app?.close(0);
  await sim?.close();
});

const get = (path: string, headers: Record<string, string> = {}) => rawGet(`${base}${path}`, headers);
const key = (s: ParsedSample) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
/** Series of the store's families (their values do not move between scrapes without a poll). */
const isSnapshot = (s: ParsedSample) => s.name.startsWith('cmdb_') && 'stack' in s.labels && !/_total$|_seconds_(bucket|sum|count)$|_budget|backlog|paused|per_minute|days_until/.test(s.name);

describe('GET /metrics?stack=NAME', () => {
  it('serves only that stack\'s series, in the text format, with a Content-Length', async () => {
    const res = await get('/metrics?stack=beta');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    const { samples } = parseExposition(res.body.toString());
    expect(samples.length).toBeGreaterThan(50);
    for (const s of samples) expect(s.labels.stack, key(s)).toBe('beta');
    expect(samples.some((s) => s.name === 'cmdb_assets')).toBe(true);
    expect(samples.some((s) => s.name === 'cmdb_license_days_until_expiry')).toBe(true);
    // The stack's own request counters come with it: the alerts about a stack read them.
    expect(samples.some((s) => s.name === 'cmdb_endpoint_requests_total')).toBe(true);
  });

  it('is gzipped when asked, one gzip stream with the same content', async () => {
    const plain = await get('/metrics?stack=alpha');
    const zipped = await get('/metrics?stack=alpha', { 'Accept-Encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(Number(zipped.headers['content-length'])).toBe(zipped.body.length);
    const cmdb = (t: string) => parseExposition(t).samples.filter(isSnapshot).map((s) => `${key(s)} ${s.value}`);
    expect(cmdb(gunzipSync(zipped.body).toString())).toEqual(cmdb(plain.body.toString()));
  });

  it('the stacks\' scrapes and the exporter\'s together hold every series of /metrics, each once', async () => {
    const whole = parseExposition((await get('/metrics')).body.toString()).samples;
    const parts = [...STACKS.map((s) => `/metrics?stack=${s}`), '/metrics?only=exporter'];
    const scraped = await Promise.all(parts.map(async (p) => parseExposition((await get(p)).body.toString()).samples));
    const union = scraped.flat();
    expect(new Set(union.map(key)).size).toBe(union.length);
    // Every series of the whole exposition appears in exactly one part (the runtime's own series
    // come and go with its handles between two scrapes; their values move too).
    const steady = (list: ParsedSample[]) => list.filter((s) => !/^(nodejs|process)_/.test(s.name)).map(key).sort();
    expect(steady(union)).toEqual(steady(whole));
    const values = (list: ParsedSample[]) => list.filter(isSnapshot).map((s) => `${key(s)} ${s.value}`).sort();
    expect(values(union)).toEqual(values(whole));
    const exporter = scraped[scraped.length - 1] as ParsedSample[];
    expect(exporter.some((s) => 'stack' in s.labels)).toBe(false);
    expect(exporter.some((s) => s.name === 'cmdb_config_last_reload_successful')).toBe(true);
  });

  it('answers an unknown stack with 404 and a text that says what to do', async () => {
    const res = await get('/metrics?stack=nope');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body.toString()).toBe('unknown stack "nope": this exporter does not poll it; GET /sd lists the stacks it serves\n');
  });

  it('refuses two stack parameters, or stack with only', async () => {
    expect((await get('/metrics?stack=alpha&stack=beta')).status).toBe(400);
    expect((await get('/metrics?stack=alpha&only=exporter')).status).toBe(400);
    expect((await get('/metrics?only=stacks')).status).toBe(400);
  });

  it('plain /metrics is unchanged: every stack, and other parameters are ignored', async () => {
    const { samples } = parseExposition((await get('/metrics?foo=bar')).body.toString());
    expect(new Set(samples.filter((s) => s.name === 'cmdb_assets').map((s) => s.labels.stack))).toEqual(new Set(STACKS));
  });
});

describe('GET /sd', () => {
  it('lists one target group per stack with the listen address, and one for the exporter', async () => {
    const res = await get('/sd');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const groups = JSON.parse(res.body.toString()) as Array<{ targets: string[]; labels: Record<string, string> }>;
    const address = new URL(base).host.replace('localhost', '127.0.0.1');
    expect(groups).toEqual([
      ...STACKS.map((stack) => ({
        targets: [address],
        labels: {
          __scheme__: 'http',
          __metrics_path__: '/metrics',
          __param_stack: stack,
          stack,
          __meta_cmdb_exporter_target: 'stack',
          __meta_cmdb_exporter_stack: stack,
        },
      })),
      { targets: [address], labels: { __scheme__: 'http', __metrics_path__: '/metrics', __param_only: 'exporter', __meta_cmdb_exporter_target: 'exporter' } },
    ]);
  });
});

describe('--web.external-url and the web config', () => {
  let other: App;
  const HASH = bcrypt.hashSync('s3cret', 4);
  beforeAll(async () => {
    const webConfig = { file: '/dev/null', basicAuthUsers: new Map([['prom', HASH]]), headers: {}, warnings: [] };
    ({ app: other } = await startExporter(configFor([stackFor(sim, { name: 'one' })]), {
      serve: true,
      schedule: false,
      webConfig,
      externalUrl: parseExternalUrl('https://cmdb-exporter.example.com/exporter/', '--web.external-url'),
    }));
  });
  afterAll(async () => {
    await other?.close(0);
  });
  const auth = { Authorization: `Basic ${Buffer.from('prom:s3cret').toString('base64')}` };

  it('/sd and /metrics?stack= need the same credentials as /metrics', async () => {
    for (const path of ['/sd', '/metrics?stack=one', '/metrics?only=exporter']) {
      expect((await rawGet(`${other.url}${path}`)).status, path).toBe(401);
    }
    expect((await rawGet(`${other.url}/metrics?stack=one`, auth)).status).toBe(200);
  });

  it('/sd gives the external URL\'s address, scheme and path prefix', async () => {
    const res = await rawGet(`${other.url}/sd`, auth);
    const groups = JSON.parse(res.body.toString()) as Array<{ targets: string[]; labels: Record<string, string> }>;
    expect(groups[0]).toEqual({
      targets: ['cmdb-exporter.example.com:443'],
      labels: expect.objectContaining({ __scheme__: 'https', __metrics_path__: '/exporter/metrics', __param_stack: 'one', stack: 'one' }) as unknown,
    });
  });
});
