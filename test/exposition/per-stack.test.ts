import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { DataEndpoint } from '../../src/api/endpoints.js';
import { createInstruments, removeStackInstruments } from '../../src/metrics/instruments.js';
import type { Sample } from '../../src/metrics/sample.js';
import { metricsSelection } from '../../src/server/http.js';
import { listenBase, parseExternalUrl } from '../../src/config/scrape-base.js';
import { targetGroups } from '../../src/server/sd.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { PerStackResponses } from '../../src/exposition/per-stack.js';
import { wholeSelfFamilies } from '../../src/exposition/self-families.js';
import { TEXT_FORMAT } from '../../src/exposition/text-format.js';
import { TEXT_LINES } from '../../src/exposition/text-lines.js';
import { SLICE } from '../../src/store/series.js';
import { SnapshotStore, type EndpointSettings } from '../../src/store/snapshot-store.js';
import { ConfigError } from '../../src/errors.js';
import { captureLogger } from '../helpers/log.js';

const SETTINGS: EndpointSettings = { intervalSeconds: 60, staleAfterSeconds: 180 };
const connector = (name: string): Sample => ({ name: 'cmdb_connector_input_records', labels: { connector: name, profile: '' }, value: 1 });

function twoStacks() {
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const store = new SnapshotStore({ instruments, logger: captureLogger().logger, renderer: TEXT_LINES });
  const exposition = new Exposition(store);
  const selfMetrics = { exposition, registries: instruments.registries };
  /** The exporter's own metrics of the whole /metrics, as it writes them. */
  const whole = async () => TEXT_FORMAT.write(await wholeSelfFamilies(instruments.registries));
  const endpoints = new Map<DataEndpoint, EndpointSettings>([['connector', SETTINGS], ['license', SETTINGS]]);
  store.addStack('a', endpoints, 1000);
  store.addStack('b', endpoints, 1000);
  store.succeed('a', 'connector', [connector('x')], 1000);
  store.succeed('b', 'connector', [connector('y')], 1000);
  return { store, exposition, instruments, selfMetrics, whole };
}

const text = (segments: readonly { parts: readonly Buffer[] }[]) => Buffer.concat(segments.flatMap((s) => s.parts)).toString();

describe('a stack\'s view of the store', () => {
  it('holds only its series, and is assembled once per change of that stack', () => {
    const { store, exposition } = twoStacks();
    const a = exposition.view('a');
    const first = a.segments();
    expect(text(first)).toContain('connector="x"');
    expect(text(first)).not.toContain('stack="b"');
    // A poll of another stack leaves it as it is: the same segments, so the same bytes and gzip.
    store.succeed('b', 'connector', [connector('z')], 1001);
    expect(a.segments()).toBe(first);
    store.succeed('a', 'connector', [connector('w')], 1002);
    const next = a.segments();
    expect(next).not.toBe(first);
    expect(text(next)).toContain('connector="w"');
  });

  it('the store\'s expiry drops a failing stack\'s series from its view, and leaves the other view as it is', () => {
    const { store, exposition } = twoStacks();
    const a = exposition.view('a');
    const b = exposition.view('b');
    const before = b.segments();
    store.fail('a', 'connector');
    expect(text(a.segments())).toContain('connector="x"'); // a scrape changes nothing: the timer expires
    store.expireStale(1000 + SETTINGS.staleAfterSeconds + 1);
    expect(text(a.segments())).not.toContain('connector="x"');
    expect(text(exposition.segments())).not.toContain('connector="x"');
    expect(b.segments()).toBe(before);
  });

  it('a stack\'s readers wait for its own pending polls only, not for another stack\'s', async () => {
    const { store, exposition } = twoStacks();
    const many = Array.from({ length: SLICE * 3 }, (_, i) => connector(`c${i}`));
    store.succeed('b', 'connector', many, 1001); // prepared in slices, over several turns
    let wholeSettled = false;
    void store.settled().then(() => (wholeSettled = true));
    await store.settledOf('a');
    expect(wholeSettled).toBe(false);
    store.succeed('a', 'connector', many, 1002);
    await store.settledOf('a');
    expect(text(exposition.view('a').segments())).toContain(`connector="c${SLICE * 3 - 1}"`);
  });

  it('a removed stack has an empty exposition and no response', async () => {
    const { store, exposition, selfMetrics } = twoStacks();
    const responses = new PerStackResponses({ ...selfMetrics, now: () => 1000 });
    expect(await responses.stack('a')).toBeDefined();
    store.removeStack('a');
    expect(exposition.view('a').segments()).toEqual([]);
    expect(responses.stack('a')).toBeUndefined();
  });

  it('a stack\'s response is the same object until something in it changes', async () => {
    const { selfMetrics } = twoStacks();
    let ms = 0;
    const responses = new PerStackResponses({ ...selfMetrics, now: () => 1000, monotonicMs: () => ms });
    const first = await responses.stack('a');
    expect(await responses.stack('a')).toBe(first);
    ms = 10_000; // the exporter's own metrics are rendered again after their maximum age
    expect(await responses.stack('a')).not.toBe(first);
  });
});

describe('the exporter\'s own metrics of each stack', () => {
  const body = async (r: Promise<{ plain: { parts: readonly Buffer[] } }> | undefined) => Buffer.concat((await r)?.plain.parts ?? []).toString();

  it('come from the stack\'s own instruments, never from the text of another stack, whatever its name', async () => {
    const { store, instruments, selfMetrics, whole: wholeText } = twoStacks();
    // A name that reads as a second label in the text format: lexing a registry's text would split it wrongly.
    const tricky = 'b",stack="a';
    store.addStack(tricky, new Map([['license', SETTINGS]]), 1000);
    instruments.requests.inc({ stack: 'a', endpoint: 'license', outcome: '200' });
    instruments.requests.inc({ stack: tricky, endpoint: 'license', outcome: '200' }, 5);
    instruments.httpRefused.inc({ reason: 'auth' });
    const responses = new PerStackResponses({ ...selfMetrics, now: () => 1000 });
    const a = await body(responses.stack('a'));
    expect(a).toContain('cmdb_endpoint_requests_total{stack="a",endpoint="license",outcome="200"} 1');
    expect(a).not.toContain(' 5\n');
    expect(a).not.toContain('cmdb_exporter_http_requests_refused_total');
    const b = await body(responses.stack(tricky));
    expect(b).toContain('outcome="200"} 5');
    expect(b).not.toContain('outcome="200"} 1\n');
    const exporter = await body(responses.exporter());
    expect(exporter).toContain('cmdb_exporter_http_requests_refused_total{reason="auth"} 1');
    expect(exporter).not.toContain('cmdb_endpoint_requests_total{');
    // The whole /metrics has every stack's series once, in one family.
    const whole = await wholeText();
    expect(whole.match(/^# TYPE cmdb_endpoint_requests_total counter$/gm)).toHaveLength(1);
    expect(whole).toContain('cmdb_endpoint_requests_total{stack="a",endpoint="license",outcome="200"} 1');
    expect(whole).toContain('outcome="200"} 5');
  });

  it('a removed stack\'s instruments go with it', async () => {
    const { instruments, whole } = twoStacks();
    instruments.requests.inc({ stack: 'gone', endpoint: 'license', outcome: '200' });
    expect(await whole()).toContain('stack="gone"');
    await removeStackInstruments(instruments, 'gone');
    expect(await whole()).not.toContain('stack="gone"');
    expect(instruments.registries.stack('gone')).toBeUndefined();
  });
});

describe('the query of the metrics path', () => {
  it('selects the whole exposition, a stack, or the exporter', () => {
    expect(metricsSelection('/metrics')).toEqual({ kind: 'all' });
    expect(metricsSelection('/metrics?stack=prod-eu')).toEqual({ kind: 'stack', stack: 'prod-eu' });
    expect(metricsSelection('/metrics?only=exporter')).toEqual({ kind: 'exporter' });
    expect(metricsSelection('/metrics?stack=a&stack=b').kind).toBe('bad');
    expect(metricsSelection('/metrics?stack=')).toEqual({ kind: 'stack', stack: '' });
  });
});

describe('service discovery addresses', () => {
  it('--web.external-url gives scheme, host:port and a path prefix', () => {
    expect(parseExternalUrl('http://cmdb-exporter.monitoring.svc:9873', 'f')).toEqual({ scheme: 'http', address: 'cmdb-exporter.monitoring.svc:9873', pathPrefix: '' });
    expect(parseExternalUrl('https://x.example.com/a/b/', 'f')).toEqual({ scheme: 'https', address: 'x.example.com:443', pathPrefix: '/a/b' });
  });

  it('refuses a URL that cannot be one, naming the flag', () => {
    for (const bad of ['cmdb-exporter:9873', 'ftp://x', 'http://u:p@x', 'http://x/?a=1', '']) {
      expect(() => parseExternalUrl(bad, '--web.external-url'), bad).toThrow(ConfigError);
      expect(() => parseExternalUrl(bad, '--web.external-url'), bad).toThrow(/--web\.external-url: /);
    }
  });

  it('falls back to the listen address; every interface shows as the host name', () => {
    expect(listenBase('127.0.0.1', 9873, false).address).toBe('127.0.0.1:9873');
    expect(listenBase('::1', 9873, true)).toEqual({ scheme: 'https', address: '[::1]:9873', pathPrefix: '' });
    expect(listenBase(undefined, 9873, false, 'node-1').address).toBe('node-1:9873');
    expect(listenBase('0.0.0.0', 9873, false, 'node-1').address).toBe('node-1:9873');
  });

  it('no stacks: only the exporter\'s own target', () => {
    expect(targetGroups([], { scheme: 'http', address: 'h:1', pathPrefix: '' }, '/metrics')).toEqual([
      { targets: ['h:1'], labels: { __scheme__: 'http', __metrics_path__: '/metrics', __param_only: 'exporter', __meta_cmdb_exporter_target: 'exporter' } },
    ]);
  });
});
