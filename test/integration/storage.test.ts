/**
 * --storage.path in the whole exporter (start() as the daemon wires it, the scheduler running, its
 * cron silent: every group polls once at start), against the real simulator: a restart serves
 * every series from the first render and reads on where it stopped; state that is not the stack's
 * is discarded with one line; a damaged file is a cold start with one warning; state past the
 * restore bound is served but read again in full; a write that fails is logged and counted.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import type { StackConfig } from '../../src/config/types.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';
import type { CronLike } from '../../src/scheduler/scheduler.js';
import { renderLanding } from '../../src/server/landing.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';

/** Every group polls once at start (the scheduler's start-up polls), never again. */
const NO_CRON: CronLike = { schedule: () => ({ stop: () => undefined }) };
/** Series from CMDB data, but those whose values move with the clock (days until expiry; the simulator's next ingestion slot). */
const CLOCK = new Set(['cmdb_license_days_until_expiry', 'cmdb_ingestion_next_run_timestamp_seconds']);
const CMDB = new Set(CATALOGUE.filter((f) => f.endpoint !== undefined && !CLOCK.has(f.name)).map((f) => f.name));

let sim: SimulatorServer;
let dir: string;
const apps: App[] = [];

beforeAll(async () => {
  sim = await startSimulator({ size: { connectors: 20, profilesPerConnector: 2, runsPerConnector: 5, actions: 5 }, connectorPeriodSeconds: 86_400 });
  sim.scenario.finishIngestion('success');
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close(0)));
  if (dir) {
    if (existsSync(join(dir, 'moved'))) renameSync(join(dir, 'moved'), join(dir, 'stacks'));
    rmSync(dir, { recursive: true, force: true });
  }
});

function stack(overrides: Partial<StackConfig> = {}): StackConfig {
  return stackFor(sim, { name: 'kept', paging: { connectorPageSize: 50, actionPageSize: 100, maxPages: 100 }, ...overrides });
}

async function run(stacks: StackConfig[], nowMs?: () => number) {
  const started = await startExporter(configFor(stacks, { storagePath: dir, logLevel: 'info' }), { schedule: true, cron: NO_CRON, initialJitterMs: 0, ...(nowMs ? { nowMs } : {}) });
  apps.push(started.app);
  return { ...started, lines: () => started.logText().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; Date.now() < deadline && i < timeoutMs / 50; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Every endpoint of every stack polled successfully. */
const allOk = (app: App) => app.landing().stacks.every((s) => s.endpoints.every((e) => e.state === 'ok')) || undefined;

function cmdbSeries(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const cut = line.lastIndexOf(' ');
    const key = line.slice(0, cut);
    const name = key.split('{')[0] ?? '';
    if (!line.startsWith('#') && CMDB.has(name)) out.set(key, line.slice(cut + 1));
  }
  return out;
}

const connectorQueries = (from: number) => sim.requests().slice(from).filter((r) => r.endpoint === 'connector').map((r) => new URLSearchParams(r.rawQuery));
// The test stack's raised budget (above the real service's 60 a minute) is warned of at every start.
const warnings = (lines: Array<Record<string, unknown>>) => lines.filter((l) => (l.level === 'warn' || l.level === 'error') && l.key !== 'rateLimitPerMinute');

/** A first process that polled everything and stopped (its state written at the stop). */
async function firstRun(s = stack()): Promise<Map<string, string>> {
  const first = await run([s]);
  await until('every endpoint polled', () => allOk(first.app));
  const series = cmdbSeries(await first.app.metricsText());
  await first.app.close();
  return series;
}

describe('a restart with --storage.path', () => {

  it('serves every series from the first render, ready at once, and reads on incrementally', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    const before = await firstRun();
    expect(before.size).toBeGreaterThan(300);
    const files = readdirSync(join(dir, 'stacks'));
    expect(files).toEqual(['kept.json.gz']);
    expect(statSync(join(dir, 'stacks', 'kept.json.gz')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'budget.log')).mode & 0o777).toBe(0o600);
    // Nothing secret on disk: no client secret, token, or text the CMDB planted in free-text fields.
    const onDisk = gunzipSync(readFileSync(join(dir, 'stacks', 'kept.json.gz'))).toString('utf8') + readFileSync(join(dir, 'budget.log'), 'utf8');
    for (const secret of [sim.secret, ...sim.issuedTokens(), ...PLANTED_SECRETS]) expect(onDisk).not.toContain(secret);

    const from = sim.requests().length;
    const second = await run([stack()]);
    // Before any timer of the new process has run (its polls included): the ages of what it restored.
    const ages = parseExposition(`${await second.app.registries.stack('kept')?.getSingleMetricAsString('cmdb_endpoint_restored_age_seconds')}\n`);
    const first = await second.app.metricsText();
    expect([...cmdbSeries(first)].filter(([k, v]) => before.get(k) !== v)).toEqual([]);
    expect(cmdbSeries(first).size).toBe(before.size);
    expect(second.app.readiness()).toEqual({ ready: true, pending: [] });
    expect(sampleValue(ages, 'cmdb_endpoint_restored_age_seconds', { stack: 'kept', endpoint: 'license' })).toBeGreaterThanOrEqual(0);
    expect(sampleValue(parseExposition(first), 'cmdb_endpoint_up', { endpoint: 'connector' })).toBe(1);
    const restoredLine = second.lines().find((l) => l.msg === 'state kept at the last stop restored: polls go on from it');
    expect(restoredLine).toMatchObject({ stack: 'kept', ageSeconds: expect.any(Number) });
    // Every sample kept, the clock-moved families included.
    expect(Number(restoredLine?.series)).toBeGreaterThanOrEqual(before.size);

    // Its first polls: an incremental read of the connector history, and every restored age gone with its endpoint's success.
    await until('no restored series left', async () => (/cmdb_endpoint_restored_age_seconds\{/.test(await second.app.metricsText()) ? undefined : true));
    const queries = connectorQueries(from);
    expect(queries.length).toBeGreaterThan(0);
    expect(queries[0]?.get('size')).toBe('25');
    expect(queries.every((q) => q.get('size') !== '50' || q.get('page') !== '0')).toBe(true);
    // The counters are this process's own (they start at 0 in it): it made no full scan.
    expect(sampleValue(parseExposition(await second.app.metricsText()), 'cmdb_connector_scans_total', { kind: 'full' })).toBe(0);
    expect(warnings(second.lines())).toEqual([]);
  });

  it('the status page shows restored series as restored, with their age, until their first poll answers (issue 37)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    await firstRun();
    // The CMDB holds every request: the first polls since the restart do not answer yet.
    sim.addFault({ endpoint: '*', hold: true });
    let second: App | undefined;
    try {
      second = (await run([stack()])).app;
      await second.store.settled();
      const endpoints = second.landing().stacks[0]?.endpoints ?? [];
      // Before: every one "ok" with the old last poll.
      expect(endpoints.filter((e) => !e.restored).map((e) => e.endpoint)).toEqual([]);
      expect(endpoints.find((e) => e.endpoint === 'connector')?.series).toBeGreaterThan(0);
      const page = renderLanding(second.landing());
      expect(page).toMatch(/<tr class="restored"><td><code>connector<\/code><\/td><td class="state">restored, \d+s old<\/td>/);
      expect(page).toContain('<p class="hint restored-line">Restored: ');
    } finally {
      sim.clearFaults();
    }
    const restarted = second;
    await until('every endpoint polled since the restart', () => (restarted.landing().stacks[0]?.endpoints.every((e) => !e.restored && e.state === 'ok') ? true : undefined));
    expect(renderLanding(restarted.landing())).not.toContain('<tr class="restored">');
  });

  it('a problem seen before the restart keeps its since on the status page', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    sim.scenario.addConnector('restart-broken', 'Error', 60);
    try {
      const first = await run([stack()]);
      await until('every endpoint polled', () => allOk(first.app));
      const broken = (app: App) => [...(app.landing().stacks[0]?.seen ?? [])].find(([key]) => key.startsWith('CmdbConnectorError:') && key.includes('restart-broken'));
      const before = await until('the broken connector seen', () => broken(first.app));
      await first.app.close();
      // Later than the first look: a problem seen afresh would say so.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const second = await run([stack()]);
      // The restored series are applied in slices: the first look after they are.
      await second.app.metricsText();
      expect(broken(second.app)).toEqual(before);
    } finally {
      sim.scenario.removeConnector('restart-broken');
    }
  });

  it('discards with one line state read from another base URL, and the file of a stack no longer configured', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    await firstRun();
    const other = await startSimulator({ size: { connectors: 2 } });
    try {
      const moved = await run([stackFor(other, { name: 'kept' }), stack({ name: 'new' })]);
      const discarded = moved.lines().filter((l) => String(l.msg).startsWith('state kept for this stack discarded'));
      expect(discarded).toEqual([expect.objectContaining({ stack: 'kept', reason: 'it was read from another base URL or client id' })]);
      expect(moved.app.store.snapshot('kept', 'connector')?.samples ?? []).toEqual([]);
      await moved.app.close(0);
      // Now only `new` is configured: the file of `kept` goes, with one line.
      const renamed = await run([stack({ name: 'new' })]);
      await until('the file of the removed stack removed', () => (existsSync(join(dir, 'stacks', 'kept.json.gz')) ? undefined : true));
      expect(renamed.lines().filter((l) => l.msg === 'state of a stack that is no longer configured discarded')).toEqual([expect.objectContaining({ stack: 'kept' })]);
      expect(warnings(renamed.lines())).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('discards with one line state of another format version', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    await firstRun();
    const path = join(dir, 'stacks', 'kept.json.gz');
    const doc = JSON.parse(gunzipSync(readFileSync(path)).toString('utf8')) as Record<string, unknown>;
    writeFileSync(path, gzipSync(JSON.stringify({ ...doc, version: 99 })));
    const next = await run([stack()]);
    expect(next.lines().filter((l) => String(l.msg).startsWith('state kept for this stack discarded'))).toEqual([
      expect.objectContaining({ reason: 'written in state format 99, this exporter reads 1' }),
    ]);
    expect(next.app.readiness().ready).toBe(false);
  });

  it.each([
    ['cut short', (path: string) => truncateSync(path, Math.floor(statSync(path).size / 2))],
    ['corrupt', (path: string) => {
      const bytes = readFileSync(path);
      for (let i = 40; i < 80; i++) bytes[i] = (bytes[i] as number) ^ 0x5a;
      writeFileSync(path, bytes);
    }],
    ['not gzip at all', (path: string) => writeFileSync(path, 'hello')],
    ['valid gzip of a document that does not validate', (path: string) => {
      const doc = JSON.parse(gunzipSync(readFileSync(path)).toString('utf8')) as { parts: Record<string, unknown> };
      writeFileSync(path, gzipSync(JSON.stringify({ ...doc, parts: { ...doc.parts, runner: { v: 1, endpoints: 'x' } } })));
    }],
  ])('a state file %s: a cold start with one warning, no crash', async (_what, damage) => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    await firstRun();
    damage(join(dir, 'stacks', 'kept.json.gz'));
    const from = sim.requests().length;
    const next = await run([stack()]);
    const warned = warnings(next.lines());
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 'warn', stack: 'kept', msg: expect.stringMatching(/^the state file of this stack (cannot be read|is not valid)/) });
    expect(next.app.readiness().ready).toBe(false);
    // Cold: a full scan, and then a good file again.
    await until('every endpoint polled', () => allOk(next.app));
    expect(connectorQueries(from)[0]?.get('size')).toBe('50');
    const written = await next.app.writeState?.('kept');
    expect(written?.bytes).toBeGreaterThan(0);
  });

  it('a request record that cannot be read: one warning, and the budget assumes a whole minute spent', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    await firstRun();
    writeFileSync(join(dir, 'budget.log'), 'garbage\n');
    const from = sim.requests().length;
    const next = await run([stack()]);
    expect(warnings(next.lines())).toEqual([expect.objectContaining({ msg: expect.stringContaining('record of the requests sent before the restart cannot be read') })]);
    // Restored and ready, and not one request yet: the first waits a minute.
    expect(next.app.readiness().ready).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sim.requests().length).toBe(from);
  });

  it('state older than the bound is served as restored but read again in full', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    const before = await firstRun();
    const from = sim.requests().length;
    const later = await run([stack()], () => Date.now() + 2 * 3600_000);
    expect(cmdbSeries(await later.app.metricsText()).size).toBe(before.size);
    expect(later.lines().find((l) => String(l.msg).startsWith('state kept at the last stop restored'))?.msg).toContain('older than an hour');
    // Every Action's jobs read again (restored statuses read ok: the requests say when it is done).
    await until('every Action\'s jobs read again', () => (sim.requests().slice(from).filter((r) => r.endpoint === 'action_jobs').length >= 5 || undefined));
    expect(connectorQueries(from)[0]?.get('size')).toBe('50');
  });

  it('a write that fails is logged once and counted, and polling goes on', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    const s = await run([stack()]);
    await until('every endpoint polled', () => allOk(s.app));
    // The directory gone and a file in its place: every write fails (also for root, unlike a chmod).
    renameSync(join(dir, 'stacks'), join(dir, 'moved'));
    writeFileSync(join(dir, 'stacks'), '');
    chmodSync(join(dir, 'stacks'), 0o600);
    expect(await s.app.writeState?.('kept')).toBeUndefined();
    expect(await s.app.writeState?.('kept')).toBeUndefined();
    const errors = s.lines().filter((l) => l.level === 'error');
    expect(errors).toEqual([expect.objectContaining({ stack: 'kept', msg: expect.stringContaining('could not write the state of this stack') })]);
    expect(sampleValue(parseExposition(await s.app.metricsText()), 'cmdb_exporter_state_writes_total', { result: 'error' })).toBe(2);
    rmSync(join(dir, 'stacks'));
    expect((await s.app.writeState?.('kept'))?.bytes).toBeUndefined();
    renameSync(join(dir, 'moved'), join(dir, 'stacks'));
    expect((await s.app.writeState?.('kept'))?.bytes).toBeGreaterThan(0);
    expect(s.lines().filter((l) => l.msg === 'the state of this stack is written again')).toHaveLength(1);
  });

  it('a lock that names another process: one error line, and nothing is written there any more, at the stop neither', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cmdb-storage-'));
    const s = await run([stack()]);
    await until('every endpoint polled', () => allOk(s.app));
    await until('a first write', () => existsSync(join(dir, 'stacks', 'kept.json.gz')) || undefined);
    // Another running process of this host took the folder (its lock names it).
    const thief = JSON.stringify({ pid: process.ppid, host: hostname(), startedAt: 1_800_000_000, command: 'daemon', token: 'thief' });
    writeFileSync(join(dir, 'cmdb-exporter.lock'), thief);
    rmSync(join(dir, 'stacks', 'kept.json.gz'));
    // Noticed at the lock's next refresh (every 10 s).
    await until('the lock noticed as lost', () => s.lines().find((l) => String(l.msg).startsWith('the lock of --storage.path was taken by another process')), 30_000);
    const record = readFileSync(join(dir, 'budget.log'), 'utf8');
    expect(await s.app.writeState?.('kept')).toBeUndefined();
    await s.app.close();
    expect(existsSync(join(dir, 'stacks', 'kept.json.gz')), 'a state file written over the holder\'s folder').toBe(false);
    expect(readFileSync(join(dir, 'cmdb-exporter.lock'), 'utf8')).toBe(thief);
    expect(readFileSync(join(dir, 'budget.log'), 'utf8')).toBe(record);
    expect(s.lines().filter((l) => String(l.msg).startsWith('the lock of --storage.path was taken'))).toHaveLength(1);
  });
});
