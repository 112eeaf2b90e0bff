/**
 * /metrics of a running exporter (in-process, real HTTP, the simulator as its CMDB) in every format
 * by the Accept header: Prometheus' default Accept gets OpenMetrics with the text format's samples,
 * so does a protobuf-first Accept (no protobuf is offered: OpenMetrics is the next it accepts), curl
 * and browsers text 0.0.4, and `/` stays the status page for a browser.
 */
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { rawGet } from '../helpers/raw-http.js';
import { canonicalSamples } from '../helpers/exposition.js';

const PROMETHEUS_DEFAULT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const PROMETHEUS_PROTOBUF = `application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,${PROMETHEUS_DEFAULT.replace('version=1.0.0,', 'version=1.0.0;q=0.8,')}`;
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

let sim: SimulatorServer;
let app: App;

const textSamples = (text: string) => canonicalSamples(text.split('\n').filter((l) => l !== '' && !l.startsWith('#') && !/^\w+_created[{ ]/.test(l)));
/** The cmdb_* samples but the one computed from the clock at each scrape (the process's own change between two requests too). */
const cmdb = (lines: readonly string[]) => lines.filter((l) => l.startsWith('cmdb_') && !l.startsWith('cmdb_license_days_until_expiry'));

beforeAll(async () => {
  sim = await startSimulator({ seed: 11 });
  ({ app } = await startExporter(configFor([stackFor(sim)]), { serve: true }));
  expect(await app.pollOnce()).toBe(true);
});

afterAll(async () => {
  await app?.close(0);
  await sim?.close();
});

const get = (path: string, headers: Record<string, string>) => rawGet(`${app.url ?? ''}${path}`, headers);

describe('/metrics by Accept', () => {
  it.each([
    ['no Accept', {}, 'text/plain; version=0.0.4; charset=utf-8'],
    ['curl', { accept: '*/*' }, 'text/plain; version=0.0.4; charset=utf-8'],
    ['a browser', { accept: BROWSER }, 'text/plain; version=0.0.4; charset=utf-8'],
    ["Prometheus' default", { accept: PROMETHEUS_DEFAULT }, 'application/openmetrics-text; version=1.0.0; charset=utf-8'],
    ['protobuf first', { accept: PROMETHEUS_PROTOBUF }, 'application/openmetrics-text; version=1.0.0; charset=utf-8'],
    ['text 1.0.0, UTF-8 names allowed', { accept: 'text/plain;version=1.0.0;escaping=allow-utf-8' }, 'text/plain; version=1.0.0; charset=utf-8; escaping=allow-utf-8'],
  ])('%s gets %s', async (_what, headers, contentType) => {
    const res = await get('/metrics', headers);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(contentType);
    expect(res.headers.vary).toBe('Accept, Accept-Encoding');
  });

  it('OpenMetrics carries the cmdb_* samples of the text format, plain and gzip, also when protobuf was asked first', async () => {
    const text = (await get('/metrics', {})).body.toString();
    const om = await get('/metrics', { accept: PROMETHEUS_DEFAULT, 'accept-encoding': 'gzip' });
    expect(om.headers['content-encoding']).toBe('gzip');
    const omText = gunzipSync(om.body).toString();
    expect(omText.endsWith('# EOF\n')).toBe(true);
    expect(cmdb(textSamples(omText))).toEqual(cmdb(textSamples(text)));
    const pb = (await get('/metrics', { accept: PROMETHEUS_PROTOBUF })).body.toString();
    expect(pb.endsWith('# EOF\n')).toBe(true);
    expect(cmdb(textSamples(pb))).toEqual(cmdb(textSamples(text)));
    expect(cmdb(textSamples(text)).length).toBeGreaterThan(50);
  });

  it("a stack's target answers in the format asked for", async () => {
    const om = await get('/metrics?stack=sim', { accept: PROMETHEUS_DEFAULT });
    expect(om.headers['content-type']).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
    const text = await get('/metrics?stack=sim', {});
    expect(cmdb(textSamples(om.body.toString()))).toEqual(cmdb(textSamples(text.body.toString())));
  });

  it('?name[]= keeps only the families named, in every format, with ?stack= too', async () => {
    const query = '?name[]=cmdb_endpoint_up&name[]=cmdb_endpoint_requests_total&name[]=cmdb_license_days_until_expiry&name[]=no_such_family';
    const types = (text: string) => [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
    const text = (await get(`/metrics${query}`, {})).body.toString();
    expect(types(text)).toEqual(['cmdb_license_days_until_expiry', 'cmdb_endpoint_up', 'cmdb_endpoint_requests_total']);
    const whole = (await get('/metrics', {})).body.toString();
    const wanted = (l: string) => /^(cmdb_endpoint_up|cmdb_endpoint_requests_total)\{/.test(l);
    expect(cmdb(textSamples(text)).filter(wanted)).toEqual(cmdb(textSamples(whole)).filter(wanted));
    const om = (await get(`/metrics${query}&stack=sim`, { accept: PROMETHEUS_DEFAULT, 'accept-encoding': 'gzip' }));
    const omText = gunzipSync(om.body).toString();
    expect(types(omText)).toEqual(['cmdb_license_days_until_expiry', 'cmdb_endpoint_up', 'cmdb_endpoint_requests']);
    expect(omText.endsWith('# EOF\n')).toBe(true);
    expect((await get(`/metrics${query}&only=exporter`, {})).body.toString()).toBe('');
    expect((await get(`/metrics${query}&stack=nope`, {})).status).toBe(404);
  });

  it('a browser still gets the status page at /', async () => {
    const res = await get('/', { accept: BROWSER });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });
});
