/**
 * The formats of /metrics with a real Prometheus 3 (the current tier's 3.5.3; `scrape_protocols` and
 * created-timestamp ingestion need 2.49 and 2.50 at least): one simulator, one built exporter, two
 * Prometheus processes scraping it every second through recording proxies (in this process):
 * - one with the default scrape protocols: it asks OpenMetrics first and gets it;
 * - one with `scrape_protocols` PrometheusProto first, `created-timestamp-zero-ingestion` and native
 *   histograms on: it asks protobuf first, which the exporter does not offer, and gets OpenMetrics,
 *   the next format of its Accept header;
 * each stores `up` 1 and the same cmdb_* series, with the same values, as a scrape of the text
 * format, and keeps for every family the type and the unit of the OpenMetrics body's `# TYPE` and
 * `# UNIT` (GET /api/v1/metadata);
 * - the first also scrapes the exporter through a proxy that cuts every body in half: under
 *   OpenMetrics the scrape is refused (no `# EOF`), so not one cmdb_* sample of it is stored.
 * Prometheus 3 asks for `escaping=allow-utf-8`, which the exporter echoes in its Content-Type.
 * Every wait is bounded and ends with the event it waits for; nothing is timed.
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { stopAllAndCheck } from './harness/processes.js';
import { JOB, startPrometheus, type RunningPrometheus, type Series } from './harness/prometheus.js';
import { http, makeTempDir, removeDir, requirePart } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'formats';
const SECRET = 'e2e-formats-secret';
const WAIT = { timeoutMs: 45_000, intervalMs: 500 };
const OPENMETRICS_ANSWER = 'application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=allow-utf-8';
/** Every format Prometheus 3 knows, protobuf first (what native histograms make it ask by default). */
const PROTO_FIRST = ['PrometheusProto', 'OpenMetricsText1.0.0', 'OpenMetricsText0.0.1', 'PrometheusText1.0.0', 'PrometheusText0.0.4'];

interface Proxy {
  readonly server: Server;
  readonly target: string;
  /** The Accept header and the Content-Type answered, of the last scrape that went through. */
  last?: { accept: string; contentType: string };
}

/** A proxy to the exporter that records what was asked and answered; `cut`: sends only the lines of the first half of each body. */
async function startProxy(exporterPort: number, cut: boolean): Promise<Proxy> {
  const proxy: { -readonly [K in keyof Proxy]: Proxy[K] } = { server: createServer(), target: '' };
  proxy.server.on('request', (req, res) => {
    const headers: IncomingHttpHeaders = { ...req.headers, host: `127.0.0.1:${exporterPort}` };
    if (cut) delete headers['accept-encoding'];
    const upstream = request({ host: '127.0.0.1', port: exporterPort, path: req.url, headers }, (up) => {
      proxy.last = { accept: req.headers.accept ?? '', contentType: up.headers['content-type'] ?? '' };
      if (!cut) {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => {
        const body = Buffer.concat(chunks);
        // Cut at the end of a line: every line it keeps is well formed, so only the missing `# EOF`
        // tells that the body is not whole (the text format would be stored half).
        const half = body.subarray(0, body.lastIndexOf(0x0a, Math.floor(body.length / 2)) + 1);
        res.writeHead(up.statusCode ?? 502, { 'content-type': up.headers['content-type'] ?? '', 'content-length': half.length });
        res.end(half);
      });
    });
    upstream.on('error', () => res.destroy());
    upstream.end();
  });
  proxy.server.listen(0, '127.0.0.1');
  await new Promise((resolve) => proxy.server.once('listening', resolve));
  proxy.target = `127.0.0.1:${(proxy.server.address() as AddressInfo).port}`;
  return proxy;
}

let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let plain: RunningPrometheus;
let protoFirst: RunningPrometheus;
const proxies: Proxy[] = [];
let toPlain: Proxy;
let toProtoFirst: Proxy;
let cutShort: Proxy;

beforeAll(async () => {
  requirePart('prometheus');
  dir = makeTempDir('formats');
  sim = await startSimulator({ secret: SECRET, live: false });
  const state = sim.state();
  // The default intervals: once ready, nothing is polled again while the test runs (values hold still).
  const configFile = writeExporterConfig(dir, {
    // info: the harness finds the exporter's URL in its "listening on" line.
    logLevel: 'info',
    defaults: { rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, track: { assets: state.trackedAssets, users: state.trackedUsers } },
  });
  exporter = await startExporter({
    args: ['--config', configFile],
    env: { CMDB_BASE_URL: sim.url, CMDB_CLIENT_ID: sim.clientId, CMDB_SECRET: SECRET, CMDB_STACK: STACK },
  });
  await waitUntilReady(exporter);
  [toPlain, toProtoFirst, cutShort] = await Promise.all([startProxy(exporter.port, false), startProxy(exporter.port, false), startProxy(exporter.port, true)]);
  proxies.push(toPlain, toProtoFirst, cutShort);
  const plainDir = makeTempDir('formats-default');
  const protoDir = makeTempDir('formats-proto-first');
  dirs.push(plainDir, protoDir);
  [plain, protoFirst] = await Promise.all([
    startPrometheus({
      dir: plainDir,
      target: toPlain.target,
      ruleFiles: new Map(),
      interval: '1s',
      extraJobs: [{ job_name: 'cut-short', static_configs: [{ targets: [cutShort.target] }] }],
    }),
    startPrometheus({
      dir: protoDir,
      target: toProtoFirst.target,
      ruleFiles: new Map(),
      interval: '1s',
      scrape: { scrape_protocols: PROTO_FIRST },
      args: ['--enable-feature=created-timestamp-zero-ingestion,native-histograms'],
    }),
  ]);
});

const dirs: string[] = [];

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await Promise.all(proxies.map((p) => new Promise((resolve) => p.server.close(resolve))));
    await sim?.close();
    for (const d of [...dirs, dir]) removeDir(d);
  });
});

/** `name{labels}` with Prometheus' own labels left out and `le`/`quantile` as numbers (`1` and `1.0` are one bound). */
function key(metric: Record<string, string>): string {
  const { __name__: name, job: _job, instance: _instance, ...labels } = metric;
  const pairs = Object.entries(labels).map(([k, v]) => `${k}=${k === 'le' || k === 'quantile' ? String(Number(v)) : v}`);
  return `${name}{${pairs.sort().join(',')}}`;
}

/** The cmdb_* samples of the exporter's text format now, by key; all but the one computed from the clock at each scrape. */
async function textSamples(): Promise<Map<string, number>> {
  const r = await http(`${exporter.url}/metrics`);
  const out = new Map<string, number>();
  for (const line of r.text.split('\n')) {
    const m = /^(cmdb_\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] === 'cmdb_license_days_until_expiry') continue;
    const labels: Record<string, string> = { __name__: m[1] ?? '' };
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
    out.set(key(labels), Number(m[3]));
  }
  return out;
}

async function storedSamples(prometheus: RunningPrometheus, job: string): Promise<Map<string, number>> {
  const series: Series[] = await prometheus.api.query(`{__name__=~"cmdb_.+",__name__!="cmdb_license_days_until_expiry",job="${job}"}`);
  return new Map(series.map((s) => [key(s.metric), Number(s.value[1])]));
}

const differences = (a: Map<string, number>, b: Map<string, number>) => {
  const out: string[] = [];
  for (const [k, v] of a) if (!b.has(k) || !Object.is(b.get(k), v)) out.push(`${k}: text ${v}, stored ${b.get(k)}`);
  for (const k of b.keys()) if (!a.has(k)) out.push(`${k}: only stored`);
  return out;
};

/** Until the latest scrape Prometheus stored holds exactly the text format's cmdb_* samples. */
async function sameAsText(prometheus: RunningPrometheus): Promise<number> {
  return waitFor(
    `${prometheus.api.url}: up 1 and the cmdb_* series of the text format`,
    async () => {
      const up = await prometheus.api.query(`up{job="${JOB}"}`);
      if (up[0]?.value[1] !== '1') return notYet({ up });
      const [text, stored] = await Promise.all([textSamples(), storedSamples(prometheus, JOB)]);
      const diff = differences(text, stored);
      return diff.length === 0 ? done(text.size) : notYet(diff.slice(0, 20));
    },
    WAIT,
  );
}

/** A family as declared: `type` and `unit` ('' for none), by its OpenMetrics name. */
type Declared = Map<string, string>;
const declaration = (type: string, unit: string) => `${type} unit=${unit}`;

/** Every family of the exporter's OpenMetrics body, by its `# TYPE` and `# UNIT` lines. */
async function openMetricsDeclared(): Promise<Declared> {
  const r = await fetch(`${exporter.url}/metrics`, { headers: { accept: 'application/openmetrics-text;version=1.0.0' }, signal: AbortSignal.timeout(10_000) });
  const text = await r.text();
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']));
  const units = new Map([...text.matchAll(/^# UNIT (\S+) (\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']));
  return new Map([...types].map(([name, type]) => [name, declaration(type, units.get(name) ?? '')]));
}

/** What `prometheus` keeps of the families its targets declared, by name (every target here is this exporter). */
async function keptDeclared(prometheus: RunningPrometheus): Promise<Declared> {
  return new Map(Object.entries(await prometheus.api.metadata()).map(([name, entries]) => [name, entries.map((e) => declaration(e.type, e.unit)).join(' and ')]));
}

/**
 * Until `prometheus` keeps every family of the OpenMetrics body with its type and unit, and nothing
 * else; prints how many families (and of them with a unit) it keeps as declared.
 */
async function metadataAsDeclared(prometheus: RunningPrometheus, what: string): Promise<{ families: number; units: number }> {
  let counted = { families: 0, units: 0, unitsKept: 0, mismatches: [] as string[] };
  try {
    return await waitFor(
      `${what}: /api/v1/metadata as the OpenMetrics # TYPE and # UNIT`,
      async () => {
        const [declared, kept] = await Promise.all([openMetricsDeclared(), keptDeclared(prometheus)]);
        const mismatches: string[] = [];
        for (const [name, d] of declared) if (kept.get(name) !== d) mismatches.push(`${name}: OpenMetrics ${d}, kept ${kept.get(name) ?? 'nothing'}`);
        for (const [name, k] of kept) if (!declared.has(name)) mismatches.push(`${name}: kept ${k}, not in OpenMetrics`);
        const withUnit = [...declared].filter(([, d]) => !d.endsWith('unit='));
        counted = { families: declared.size, units: withUnit.length, unitsKept: withUnit.filter(([name, d]) => kept.get(name) === d).length, mismatches };
        return kept.size > 0 && mismatches.length === 0 ? done({ families: declared.size, units: withUnit.length }) : notYet(mismatches.slice(0, 30));
      },
      WAIT,
    );
  } finally {
    console.log(
      `${what}: ${counted.families} families in OpenMetrics, ${counted.units} with a # UNIT, ${counted.unitsKept} of them kept with it; ${counted.mismatches.length} families kept otherwise`,
    );
  }
}

describe('Prometheus 3 scraping the exporter', () => {
  it('with the default scrape protocols, it asks OpenMetrics first, gets it, and stores the text format cmdb_* series with their values, types and units', async () => {
    const count = await sameAsText(plain);
    expect(count).toBeGreaterThan(50);
    expect(toPlain.last?.accept).toMatch(/^application\/openmetrics-text;version=1\.0\.0/);
    expect(toPlain.last?.contentType).toBe(OPENMETRICS_ANSWER);
    const { families, units } = await metadataAsDeclared(plain, 'default scrape protocols');
    expect(families).toBeGreaterThan(80);
    expect(units).toBeGreaterThan(30);
  });

  it('with protobuf first (created timestamps and native histograms on), it gets OpenMetrics and stores the same series, values, types and units', async () => {
    const count = await sameAsText(protoFirst);
    expect(count).toBeGreaterThan(50);
    const { families, units } = await metadataAsDeclared(protoFirst, 'PrometheusProto first');
    expect(families).toBeGreaterThan(80);
    expect(units).toBeGreaterThan(30);
    expect(toProtoFirst.last?.accept).toMatch(/^application\/vnd\.google\.protobuf;proto=io\.prometheus\.client\.MetricFamily;encoding=delimited.*,application\/openmetrics-text;version=1\.0\.0/);
    expect(toProtoFirst.last?.contentType).toBe(OPENMETRICS_ANSWER);
  });

  it('an OpenMetrics body cut short is refused: the target is down and none of its samples is stored', async () => {
    const target = await waitFor(
      'the cut-short target scraped and refused',
      async () => {
        const t = (await plain.api.targets()).find((x) => x.labels.job === 'cut-short');
        return t && t.health === 'down' && t.lastError !== '' ? done(t) : notYet(t ?? 'no target yet');
      },
      WAIT,
    );
    expect(target.lastError).toMatch(/EOF/);
    expect(cutShort.last?.contentType).toBe(OPENMETRICS_ANSWER);
    expect(await plain.api.query('up{job="cut-short"}')).toEqual([expect.objectContaining({ value: [expect.any(Number), '0'] })]);
    expect(await storedSamples(plain, 'cut-short')).toEqual(new Map());
  });
});
