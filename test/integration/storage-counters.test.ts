/**
 * The exporter's own counters across a restart with --storage.path, in the whole exporter (start()
 * as the daemon wires it, polled by hand) against the simulator: they belong to the process that
 * counts (as in client_golang and prom-client), so a restart starts every counter series at 0 with
 * a new start (OpenMetrics `_created`), while the CMDB's series come back from the state; a
 * `counters` part an earlier version wrote is not read; a reload keeps a stack's counters and
 * starts, and a stack it removes loses them.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { ExporterConfig, StackConfig } from '../../src/config/types.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';

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

type Counted = Map<string, { value: number; start: number | undefined }>;

/** The kept stack's counter series as OpenMetrics serves them: `family{labels}` → value and start (`_created`). */
async function counters(app: App): Promise<Counted> {
  const om = Buffer.concat((await app.metrics('openmetrics')).plain.parts).toString('utf8');
  const families = new Set([...om.matchAll(/^# TYPE (\S+) counter$/gm)].map((m) => m[1]));
  const out: Counted = new Map();
  const starts = new Map<string, number>();
  for (const m of om.matchAll(/^(\w+)_(total|created)(\{[^}]*stack="kept"[^}]*\}) (\S+)$/gm)) {
    const [, family = '', suffix, labels = '', value] = m;
    if (!families.has(family)) continue;
    const key = `${family}_total${labels}`;
    if (suffix === 'created') starts.set(key, Number(value));
    else out.set(key, { value: Number(value), start: undefined });
  }
  for (const [key, c] of out) c.start = starts.get(key);
  return out;
}

const TOKENS = 'cmdb_token_requests_total{stack="kept",outcome="success"}';
const SNAPSHOT = new Set(CATALOGUE.filter((f) => f.origin === 'snapshot' && f.name !== 'cmdb_license_days_until_expiry').map((f) => f.name));
/** The series of the CMDB's figures (the store's), but the one computed at scrape time. */
const CMDB_SERIES = (text: string) => text.split('\n').filter((l) => SNAPSHOT.has(l.split(/[{ ]/)[0] ?? ''));

/** A first process that polled once and stopped (its state written at the stop): what it served last. */
async function firstRun(): Promise<{ counted: Counted; text: string }> {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-counters-'));
  const first = await run(0);
  await first.app.pollOnce();
  const result = { counted: await counters(first.app), text: await first.app.metricsText() };
  await first.app.close();
  return result;
}

describe('the counters across a restart with --storage.path', () => {
  it('start at 0 with a new start in the new process, while the CMDB series come back', async () => {
    const before = await firstRun();
    expect(before.counted.get(TOKENS)?.value).toBe(1);
    expect(before.counted.size).toBeGreaterThan(10);
    const startedAt = Date.now() / 1000 + LATER_MS / 1000;
    const second = await run(LATER_MS);
    // Before its first poll: the CMDB series as the last process served them, and no count of it.
    expect(CMDB_SERIES(await second.app.metricsText())).toEqual(CMDB_SERIES(before.text));
    expect(CMDB_SERIES(before.text).length).toBeGreaterThan(20);
    for (const [key, c] of await counters(second.app)) {
      expect(c.value, key).toBe(0);
      expect(c.start, key).toBeGreaterThanOrEqual(startedAt);
    }

    await second.app.pollOnce();
    const after = await counters(second.app);
    let compared = 0;
    for (const [key, b] of before.counted) {
      const a = after.get(key);
      if (!a) continue;
      compared++;
      // A new start for every series: Prometheus reads the restart as a reset, and counts nothing twice.
      expect(a.start, key).toBeGreaterThan(b.start ?? Infinity);
    }
    expect(compared).toBeGreaterThan(10);
    // Its own token only.
    expect(after.get(TOKENS)?.value).toBe(1);
    expect(second.lines().filter((l) => l.level === 'warn' && l.key !== 'rateLimitPerMinute')).toEqual([]);
  });

  it('a counters part an earlier version wrote is not read: the rest is restored, the counters start at 0', async () => {
    await firstRun();
    const file = join(dir, 'stacks', 'kept.json.gz');
    const doc = JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as { parts: Record<string, unknown> };
    doc.parts.counters = { v: 1, families: { cmdb_token_requests_total: [[{ outcome: 'success' }, 5, 1_800_000_000]] } };
    writeFileSync(file, gzipSync(JSON.stringify(doc)));
    const second = await run(LATER_MS);
    expect(second.lines().filter((l) => l.level === 'warn' && l.key !== 'rateLimitPerMinute')).toEqual([]);
    expect(second.lines().some((l) => l.msg === 'state kept at the last stop restored: polls go on from it')).toBe(true);
    expect(second.app.readiness().ready).toBe(true);
    expect((await counters(second.app)).get(TOKENS)?.value).toBe(0);
  });

  it('a reload keeps a stack\'s counters and starts; a stack it removes loses them', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-counters-'));
    let config = configFor([stack()], { storagePath: dir, logLevel: 'info', enableReload: true });
    const app = (await run(0, () => config)).app;
    await app.pollOnce();
    const counted = await counters(app);
    expect(counted.get(TOKENS)?.value).toBe(1);

    // Unchanged, in place (another rate), restarted (another page size: a new road, the same service and credentials).
    const paging = stack().paging;
    for (const [what, next] of [
      ['unchanged', stack()],
      ['reconfigured', stack({ rateLimitPerMinute: 5000 })],
      ['restarted', stack({ rateLimitPerMinute: 5000, paging: { ...paging, actionPageSize: paging.actionPageSize + 1 } })],
    ] as const) {
      config = configFor([next], { storagePath: dir, logLevel: 'info', enableReload: true });
      expect((await app.reload()).message, what).toContain(`"${what}":1`);
      expect(await counters(app), what).toEqual(counted);
    }

    const removedAt = Date.now() / 1000;
    config = configFor([], { storagePath: dir, logLevel: 'info', enableReload: true });
    expect((await app.reload()).message).toContain('"removed":1');
    config = configFor([stack()], { storagePath: dir, logLevel: 'info', enableReload: true });
    expect((await app.reload()).message).toContain('"added":1');
    const again = await counters(app);
    expect(again.get(TOKENS)).toEqual({ value: 0, start: expect.any(Number) });
    for (const [key, c] of again) {
      expect(c.value, key).toBe(0);
      // Not counted since the removal: it starts then at the earliest.
      expect(c.start, key).toBeGreaterThanOrEqual(removedAt);
    }
  });
});
