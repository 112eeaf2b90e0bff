/**
 * The `counters` part in the whole exporter (start() as the daemon wires it, polled by hand) against
 * the simulator: a restart with --storage.path counts on from the last process's counters, and
 * each counter series keeps its start in protobuf `created_timestamp` and OpenMetrics `_created`;
 * a reload restores nothing a second time; a stack a reload removes loses its counters and starts;
 * a counters part that does not validate is a cold start whose warning names it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { ExporterConfig, StackConfig } from '../../src/config/types.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { decodeFamilies, seconds } from '../helpers/metric-family-decode.js';

/** The second process's clock runs this far ahead of the first's: a start taken in it is told apart. */
const LATER_MS = 600_000;

let sim: SimulatorServer;
let dir: string;
const apps: App[] = [];

beforeAll(async () => {
  sim = await startSimulator({ size: { connectors: 5, profilesPerConnector: 2, runsPerConnector: 3, actions: 3 }, connectorPeriodSeconds: 86_400 });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close(0)));
  rmSync(dir, { recursive: true, force: true });
});

const stack = (overrides: Partial<StackConfig> = {}) => stackFor(sim, { name: 'kept', ...overrides });

/** The exporter with --storage.path DIR and `_created` lines, its clock `aheadMs` ahead; `config()` is what a reload reads. */
async function run(aheadMs: number, config: () => ExporterConfig = () => configFor([stack()], { storagePath: dir, logLevel: 'info', enableReload: true })) {
  const started = await startExporter(config(), { schedule: false, nowMs: () => Date.now() + aheadMs, openMetricsCreated: true, loadConfig: config });
  apps.push(started.app);
  return { ...started, lines: () => started.logText().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

type Served = Map<string, { kind: 'counter' | 'histogram'; value: number; start: number | undefined }>;

/** The kept stack's counter and histogram series as protobuf serves them: `family{labels}` → value (a histogram's count) and start. */
async function served(app: App): Promise<Served> {
  const out: Served = new Map();
  for (const f of decodeFamilies(Buffer.concat((await app.metrics('protobuf')).plain.parts))) {
    for (const m of f.metric ?? []) {
      if (!m.label?.some((l) => l.name === 'stack' && l.value === 'kept')) continue;
      const key = `${f.name}{${m.label.map((l) => `${l.name}=${l.value}`).join(',')}}`;
      if (m.counter) out.set(key, { kind: 'counter', value: m.counter.value ?? 0, start: seconds(m.counter.createdTimestamp) });
      if (m.histogram) out.set(key, { kind: 'histogram', value: m.histogram.sampleCount ?? 0, start: seconds(m.histogram.createdTimestamp) });
    }
  }
  return out;
}

const counters = (s: Served) => new Map([...s].filter(([, v]) => v.kind === 'counter').map(([k, v]) => [k, { value: v.value, start: v.start }]));
const TOKENS = 'cmdb_token_requests_total{stack=kept,outcome=success}';

/** A first process that polled once and stopped (its state written at the stop): what it served last. */
async function firstRun(): Promise<Served> {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-counters-'));
  const first = await run(0);
  await first.app.pollOnce();
  const last = await served(first.app);
  await first.app.close();
  return last;
}

describe('the counters across a restart with --storage.path', () => {
  it('count on from the last process, each series with its start; histograms start again in the new process', async () => {
    const before = await firstRun();
    expect(before.get(TOKENS)?.value).toBe(1);
    const startedAt = Date.now() / 1000;
    const second = await run(LATER_MS);
    // Before its first poll: the same counters, values and starts, as the last process served.
    expect(counters(await served(second.app))).toEqual(counters(before));
    const om = (await second.app.metrics('openmetrics')).plain.parts.join('');
    expect(om).toContain(`cmdb_token_requests_created{stack="kept",outcome="success"} ${String(before.get(TOKENS)?.start)}\n`);

    await second.app.pollOnce();
    const after = await served(second.app);
    let histograms = 0;
    for (const [key, b] of before) {
      const a = after.get(key);
      if (b.kind === 'counter') {
        expect(a?.start, key).toBe(b.start);
        expect(a?.value, key).toBeGreaterThanOrEqual(b.value);
      } else if (a) {
        // A histogram is not kept: its count is this process's, and so is its start.
        expect(a.start, key).toBeGreaterThanOrEqual(startedAt + LATER_MS / 1000);
        histograms++;
      }
    }
    expect(histograms).toBeGreaterThan(0);
    // Its own token: counted on from the last process's one.
    expect(after.get(TOKENS)?.value).toBe(2);
    expect(second.lines().filter((l) => l.level === 'warn' && l.key !== 'rateLimitPerMinute')).toEqual([]);
  });

  it('a reload restores nothing a second time; a stack it removes loses its counters and their starts', async () => {
    await firstRun();
    let config = configFor([stack()], { storagePath: dir, logLevel: 'info', enableReload: true });
    const second = await run(LATER_MS, () => config);
    const restored = counters(await served(second.app));
    expect(restored.get(TOKENS)?.value).toBe(1);

    // Unchanged, in place (another rate), restarted (another page size: a new road, the same service and credentials).
    const paging = stack().paging;
    for (const [what, next] of [
      ['unchanged', stack()],
      ['reconfigured', stack({ rateLimitPerMinute: 5000 })],
      ['restarted', stack({ rateLimitPerMinute: 5000, paging: { ...paging, actionPageSize: paging.actionPageSize + 1 } })],
    ] as const) {
      config = configFor([next], { storagePath: dir, logLevel: 'info', enableReload: true });
      expect((await second.app.reload()).message, what).toContain(`"${what}":1`);
      expect(counters(await served(second.app)), what).toEqual(restored);
    }

    config = configFor([], { storagePath: dir, logLevel: 'info', enableReload: true });
    expect((await second.app.reload()).message).toContain('"removed":1');
    const addedAt = Date.now() / 1000 + LATER_MS / 1000;
    config = configFor([stack()], { storagePath: dir, logLevel: 'info', enableReload: true });
    expect((await second.app.reload()).message).toContain('"added":1');
    const again = counters(await served(second.app));
    expect(again.get(TOKENS)).toEqual({ value: 0, start: expect.any(Number) });
    for (const [key, c] of again) {
      expect(c.value, key).toBe(0);
      expect(c.start, key).toBeGreaterThanOrEqual(addedAt);
    }
  });

  it('a counters part that does not validate: the stack starts cold, and the warning names the part', async () => {
    await firstRun();
    const file = join(dir, 'stacks', 'kept.json.gz');
    const doc = JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as { parts: Record<string, unknown> };
    doc.parts.counters = { v: 1, families: { cmdb_series_dropped_total: [[{}, -1, 1_800_000_000]] } };
    writeFileSync(file, gzipSync(JSON.stringify(doc)));
    const second = await run(LATER_MS);
    expect(second.lines().filter((l) => l.level === 'warn' && l.key !== 'rateLimitPerMinute')).toEqual([
      expect.objectContaining({ reason: 'part counters does not validate', msg: 'the state file of this stack is not valid: it starts cold' }),
    ]);
    const cold = await served(second.app);
    expect(cold.get(TOKENS)?.value).toBe(0);
    expect(second.app.readiness().ready).toBe(false);
  });
});
