/** The stacks module: secrets are known to the scrubber before the first log line; reload effects. */
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app.js';
import { DATA_ENDPOINTS } from '../src/api/endpoints.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { ExporterConfig, StackConfig } from '../src/config/types.js';
import { ConfigError } from '../src/errors.js';
import { nextScheduledRun, spreadOffset } from '../src/scheduler/scheduler.js';
import { enabledEndpoints } from '../src/config/endpoints.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { sim } from './cmdb/helpers/sim.js';
import { waitFor } from './helpers/wait.js';
import { configFor, startExporter, stackFor } from './helpers/exporter.js';
import { testStack } from './helpers/stack.js';

const SECRET = 'planted-secret-7f3a9c';
const apps: App[] = [];
const sims: SimulatorServer[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close(0)));
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

describe('secrets at start-up', () => {
  it.each([
    ['userAgent', { userAgent: `agent ${SECRET}` }],
    ['a tracked asset name', { track: { assets: [SECRET], users: [] } }],
  ])('a secret pasted into %s never reaches the effective configuration logged at start-up', async (_where, overrides) => {
    const stack = testStack({ name: 'a', baseUrl: 'http://127.0.0.1:9', auth: { kind: 'client', clientId: 'c', secret: SECRET, clientIdKey: 'clientID' }, ...overrides });
    const { app, logText } = await startExporter(configFor([stack], { logLevel: 'debug' }));
    apps.push(app);
    const text = logText();
    expect(text).toContain('effective configuration (secrets redacted)');
    expect(text).toContain('[REDACTED]');
    expect(text).not.toContain(SECRET);
  });

  it('a secret of a reloaded configuration, pasted into another key, never reaches the line that logs it', async () => {
    const auth = (secret: string) => ({ kind: 'client' as const, clientId: 'c', secret, clientIdKey: 'clientID' });
    const first = testStack({ name: 'a', baseUrl: 'http://127.0.0.1:9', auth: auth('first-secret-5d21') });
    let config = configFor([first], { logLevel: 'info' });
    const { app, logText } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    config = configFor([first, testStack({ name: 'b', baseUrl: 'http://127.0.0.1:9', auth: auth(SECRET), userAgent: `agent ${SECRET}` })], { logLevel: 'info' });
    expect(await app.reload()).toMatchObject({ ok: true });
    const reloaded = logText()
      .split('\n')
      .filter((l) => l.includes('configuration reloaded'));
    expect(reloaded).toHaveLength(1);
    expect(reloaded[0]).toContain('[REDACTED]');
    expect(logText()).not.toContain(SECRET);
  });

  it('logs the effective configuration at debug only: at info the first line is a short "starting"', async () => {
    const stack = testStack({ name: 'a', baseUrl: 'http://127.0.0.1:9', auth: { kind: 'client', clientId: 'c', secret: SECRET, clientIdKey: 'clientID' } });
    const { app, logText } = await startExporter(configFor([stack], { logLevel: 'info' }));
    apps.push(app);
    const [first] = logText().split('\n').map((l) => JSON.parse(l || '{}') as Record<string, unknown>);
    expect(first).toMatchObject({ level: 'info', msg: 'cmdb-exporter starting', stacks: 1 });
    expect(first).not.toHaveProperty('config');
    expect(logText()).not.toContain('effective configuration');
  });
});

describe('reload', () => {
  const stack = (name: string) =>
    testStack({ name, baseUrl: 'http://127.0.0.1:9', auth: { kind: 'token', token: `tok-${name}-1234` } });

  it('a removed stack leaves no series behind; a kept one keeps its counters', async () => {
    let config = configFor([stack('a'), stack('b')]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    const before = await app.metricsText();
    expect(before).toContain('stack="b"');
    config = configFor([stack('a')]);
    const outcome = await app.reload();
    expect(outcome).toMatchObject({ ok: true });
    const after = await app.metricsText();
    expect(after).not.toContain('stack="b"');
    expect(after).toContain('cmdb_token_requests_total{stack="a",outcome="success"} 0');
    expect(after).toContain('cmdb_rate_limit_requests_per_minute{stack="a"}');
  });

  it('a reload whose apply throws is reported failed, and later reloads still run', async () => {
    const config = configFor([stack('a')]);
    // An unknown log level passes the loader in this test (it bypasses it) and makes applying throw.
    let next: ExporterConfig = { ...config, logLevel: 'no-such-level' as ExporterConfig['logLevel'] };
    const { app } = await startExporter(config, { loadConfig: () => next });
    apps.push(app);
    const failed = await app.reload();
    expect(failed).toMatchObject({ ok: false, message: expect.stringContaining('failed while it was applied') });
    expect(await app.metricsText()).toContain('cmdb_config_last_reload_successful 0');
    expect(app.landing().rejectedReload?.message).toContain('failed while it was applied');
    next = configFor([stack('a'), stack('b')]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"added":1') });
    expect(await app.metricsText()).toContain('cmdb_config_last_reload_successful 1');
    expect(app.landing().rejectedReload).toBeUndefined();
  });

  it('a rejected reload is on the status page model until the next good one', async () => {
    const good = configFor([stack('a')]);
    let load: () => ReturnType<typeof configFor> = () => good;
    const { app } = await startExporter(good, { loadConfig: () => load() });
    apps.push(app);
    expect(app.landing().rejectedReload).toBeUndefined();
    load = () => {
      throw new ConfigError([{ path: 'stacks[0].baseURL', message: 'unknown key; did you mean "baseUrl"?' }]);
    };
    expect(await app.reload()).toMatchObject({ ok: false });
    expect(app.landing().rejectedReload?.message).toContain('stacks[0].baseURL: unknown key');
    // Still there at the next look, not only once.
    expect(app.landing().rejectedReload).toBeDefined();
    load = () => good;
    expect(await app.reload()).toMatchObject({ ok: true });
    expect(app.landing().rejectedReload).toBeUndefined();
  });

  describe('the request budget survives a reload', () => {
    // 60 a minute: a burst of 10, then one request a second. Only the license is polled.
    const licenseOnly = (sim: SimulatorServer, userAgent: string) =>
      testStack({
        name: 'a',
        baseUrl: sim.url,
        auth: { kind: 'client', clientId: sim.clientId, secret: sim.secret, clientIdKey: 'clientID' },
        rateLimitPerMinute: 60,
        // Every request reserves its budget at once, however slow the machine answers.
        maxConcurrency: 16,
        userAgent,
        disabledEndpoints: DATA_ENDPOINTS.filter((e) => e !== 'license'),
      });
    const waited = async (app: App) => {
      const metric = app.registries.stack('a')?.getSingleMetric('cmdb_rate_limit_wait_seconds_total');
      const values = metric ? (await metric.get()).values : [];
      return values.find((v) => v.labels.stack === 'a')?.value ?? 0;
    };

    it.each([
      ['keeps', 'agent-1'],
      ['changes', 'agent-2'],
    ])('a reload that %s the stack does not hand it a fresh full bucket', async (_what, nextAgent) => {
      const sim = await startSimulator({ host: '127.0.0.1', port: 0, seed: 3 });
      sims.push(sim);
      let config = configFor([licenseOnly(sim, 'agent-1')]);
      const { app } = await startExporter(config, { loadConfig: () => config });
      apps.push(app);
      // The token and ten license polls at once: the burst of ten is spent, the last request waited.
      await Promise.all(Array.from({ length: 10 }, () => app.pollOnce()));
      expect(sim.requests()).toHaveLength(11);
      const before = await waited(app);
      expect(before).toBeGreaterThan(0);
      config = configFor([licenseOnly(sim, nextAgent)]);
      expect(await app.reload()).toMatchObject({ ok: true });
      await app.pollOnce();
      // With a fresh bucket the next requests would leave at once; the spent budget makes them wait.
      expect(await waited(app)).toBeGreaterThan(before);
    });
  });

});

describe('Action job backlog', () => {
  // One job fetch a minute: a poll of a 10 s interval fetches one Action's jobs, the rest wait.
  const slowJobs = (sim: SimulatorServer) =>
    testStack({
      name: 'a',
      baseUrl: sim.url,
      auth: { kind: 'client', clientId: sim.clientId, secret: sim.secret, clientIdKey: 'clientID' },
      actionJobsPerMinute: 1,
      intervals: { ...testStack().intervals, actionJobs: 10 },
    });
  const startSim = async () => {
    const sim = await startSimulator({ host: '127.0.0.1', port: 0, seed: 3 });
    sims.push(sim);
    return sim;
  };

  it('is exported as cmdb_action_jobs_backlog and shown on the status page while the scheduler paces the fetches', async () => {
    const sim = await startSim();
    const { app } = await startExporter(configFor([slowJobs(sim)]), { schedule: true, initialJitterMs: 0 });
    apps.push(app);
    const actions = sim.state().counts.actions;
    expect(actions).toBeGreaterThan(1);
    const line = `cmdb_action_jobs_backlog{stack="a"} ${actions - 1}`;
    await waitFor(line, async () => ((await app.metricsText()).includes(line) ? true : undefined));
    expect(sim.requests().filter((r) => r.endpoint === 'action_jobs')).toHaveLength(1);
    expect(app.landing().stacks[0]?.jobBacklog).toBe(actions - 1);
  });

  it('stays what the poller holds across a reload that keeps the stack running (not zeroed until the next job fetch)', async () => {
    const sim = await startSim();
    let config = configFor([slowJobs(sim)]);
    const { app } = await startExporter(config, { schedule: true, initialJitterMs: 0, loadConfig: () => config });
    apps.push(app);
    const actions = sim.state().counts.actions;
    const line = `cmdb_action_jobs_backlog{stack="a"} ${actions - 1}`;
    await waitFor(line, async () => ((await app.metricsText()).includes(line) ? true : undefined));
    // Another interval: the same road, so the stack is reconfigured in place and keeps its backlog.
    config = configFor([{ ...slowJobs(sim), intervals: { ...slowJobs(sim).intervals, actionJobs: 12 } }]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"reconfigured":1') });
    const held = [app.landing().stacks[0]?.jobBacklog];
    const served = Number(/^cmdb_action_jobs_backlog\{stack="a"\} (\d+)$/m.exec(await app.metricsText())?.[1]);
    held.push(app.landing().stacks[0]?.jobBacklog);
    expect(held[0]).toBeGreaterThan(0);
    // A job fetch may land between the two looks at the poller: the gauge is one of them, never 0.
    expect(held).toContain(served);
  });

  it('does not hold back --once: one round fetches every Action', async () => {
    const sim = await startSim();
    const { app } = await startExporter(configFor([slowJobs(sim)]));
    apps.push(app);
    await app.pollOnce();
    expect(sim.requests().filter((r) => r.endpoint === 'action_jobs')).toHaveLength(sim.state().counts.actions);
    expect(app.landing().stacks[0]?.jobBacklog).toBe(0);
  });
});

describe('reload of a changed stack (issue 11 #10)', () => {
  let simulator: SimulatorServer;
  beforeAll(async () => {
    simulator = await startSimulator({ seed: 7, live: false });
  });
  afterAll(() => simulator.close());

  it('keeps the data series and readiness until the new runtime has polled', async () => {
    let config = configFor([stackFor(simulator, { userAgent: 'first' })]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    expect(await app.pollOnce()).toBe(true);
    expect(app.readiness().ready).toBe(true);
    const data = (text: string) => text.split('\n').filter((l) => l.startsWith('cmdb_assets{') || l.startsWith('cmdb_connector_info{'));
    const before = data(await app.metricsText());
    expect(before.length).toBeGreaterThan(1);

    // Another page size: a new road (src/stacks.ts sameRoad), so the stack restarts.
    config = configFor([stackFor(simulator, { userAgent: 'second', paging: { ...stackFor(simulator).paging, actionPageSize: 50 } })]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"restarted":1') });
    // No scheduler here: the new runtime has not polled, yet nothing went missing.
    expect(app.readiness()).toEqual({ ready: true, pending: [] });
    expect(data(await app.metricsText())).toEqual(before);
    expect(await app.metricsText()).toContain('cmdb_endpoint_up{stack="sim",endpoint="license"} 1');

    // Its first poll replaces what was held: data that changed meanwhile shows, none is left over.
    const assets = Number(/^cmdb_assets\{stack="sim"\} (\d+)$/m.exec(before.join('\n'))?.[1]);
    simulator.scenario.setAssetCount(assets + 17);
    expect(await app.pollOnce()).toBe(true);
    const after = data(await app.metricsText());
    expect(after).toEqual(before.map((l) => (l.startsWith('cmdb_assets{') ? `cmdb_assets{stack="sim"} ${assets + 17}` : l)));
    expect(after).not.toEqual(before);
  });

  it('a reload that tracks names and disables an endpoint keeps the stack running: the new endpoints polled, the old one gone', async () => {
    const tracked = simulator.state().trackedAssets.slice(0, 1);
    let config = configFor([stackFor(simulator, { track: { assets: [], users: [] } })]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    expect(await app.pollOnce()).toBe(true);
    const runtime = app.landing().stacks[0];
    expect(runtime?.endpoints.map((e) => e.endpoint)).not.toContain('asset_change');

    config = configFor([stackFor(simulator, { track: { assets: tracked, users: [] }, disabledEndpoints: ['license'] })]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"reconfigured":1') });
    const endpoints = () => app.landing().stacks[0]?.endpoints ?? [];
    expect(endpoints().find((e) => e.endpoint === 'asset_change')).toMatchObject({ state: 'pending' });
    expect(endpoints().map((e) => e.endpoint)).not.toContain('license');
    expect(await app.metricsText()).not.toContain('cmdb_license_info{');
    expect(await app.pollOnce()).toBe(true);
    expect(endpoints().find((e) => e.endpoint === 'asset_change')).toMatchObject({ state: 'ok' });
    // The same runtime: its connector history is read incrementally, not in full again.
    const text = await app.metricsText();
    expect(text).toMatch(/^cmdb_connector_scans_total\{stack="sim",kind="full"\} 1$/m);
    expect(text).toMatch(/^cmdb_connector_scans_total\{stack="sim",kind="incremental"\} 1$/m);
  });

  it('a stack that is new (or re-added after removal) joins: shown pending until its first poll, never unready, no data left over', async () => {
    let config = configFor([stackFor(simulator)]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    expect(app.readiness().ready).toBe(false);
    await app.pollOnce();
    config = configFor([]);
    await app.reload();
    config = configFor([stackFor(simulator)]);
    await app.reload();
    // No scheduler here: nothing has polled the re-added stack.
    const readiness = app.readiness();
    expect(readiness.ready).toBe(true);
    expect(readiness.pending).toEqual([]);
    expect(readiness.joining).toContainEqual({ stack: 'sim', endpoint: 'license' });
    expect(app.landing().stacks[0]?.joining).toBe(true);
    expect(await app.metricsText()).not.toContain('cmdb_connector_info{');
    expect(await app.pollOnce()).toBe(true);
    expect(app.readiness()).toEqual({ ready: true, pending: [] });
    expect(app.landing().stacks[0]?.joining).toBeUndefined();
  });

  it('a stack the process started with still holds readiness when a reload restarts it before its first poll; one that joined still does not', async () => {
    // A change of time zone is a new road (the history's times are read in it): the stack restarts.
    let config = configFor([stackFor(simulator, { name: 'first', timezone: 'UTC' })]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    config = configFor([stackFor(simulator, { name: 'first', timezone: 'Europe/Berlin' }), stackFor(simulator, { name: 'late' })]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"restarted":1') });
    config = configFor([stackFor(simulator, { name: 'first', timezone: 'Europe/Paris' }), stackFor(simulator, { name: 'late', timezone: 'Europe/Berlin' })]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"restarted":2') });
    const readiness = app.readiness();
    expect(readiness.ready).toBe(false);
    expect(new Set(readiness.pending.map((p) => p.stack))).toEqual(new Set(['first']));
    expect(new Set(readiness.joining?.map((p) => p.stack))).toEqual(new Set(['late']));
    expect(app.landing().stacks.map((st) => [st.name, st.joining ?? false])).toEqual([
      ['first', false],
      ['late', true],
    ]);
  });
});

describe('a stack paused by a server Retry-After (issue 11 #1)', () => {
  it('is on the status page model and /metrics until a reload ends it; its endpoints do not report up', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 999_999_999, times: 1 });
    // Short intervals: requests queued for a slot when the 429 arrives wait out the pause until
    // their poll's interval ends (the poll bound), and pollOnce waits for every poll.
    const intervals = Object.fromEntries(Object.keys(BUILTIN_SETTINGS.intervals).map((k) => [k, 2])) as StackConfig['intervals'];
    // A pause of up to 15 minutes (the default, retries.maxRetryAfterSeconds 120 s, would do as well).
    const retries = { ...BUILTIN_SETTINGS.retries, maxRetryAfterSeconds: 900 };
    const config = configFor([stackFor(s as SimulatorServer, { intervals, retries })]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    // Read before the poll: the pause (900 s, the cap) ends at least that long after it.
    const before = Date.now() / 1000;
    await app.pollOnce();
    const [model] = app.landing().stacks;
    const [pause] = model?.pauses ?? [];
    expect(pause).toMatchObject({ scope: 'stack', status: 429, request: 'GET /CMDB/v2/system/metrics/license' });
    expect(pause?.until).toBeGreaterThanOrEqual(before + 900 - 1);
    const paused = /^cmdb_rate_limit_paused_until_timestamp_seconds\{stack="sim"\} (\S+)$/m;
    expect(Number(paused.exec(await app.metricsText())?.[1])).toBeCloseTo(pause?.until ?? 0, 0);
    expect(model?.endpoints.find((e) => e.endpoint === 'license')).toMatchObject({ state: 'failing', outcome: 'rate_limited' });
    expect(await app.metricsText()).toMatch(/^cmdb_endpoint_up\{stack="sim",endpoint="license"\} 0$/m);
    // Whatever could not be polled because of the pause says why; nothing is left pending or up without data.
    for (const e of model?.endpoints ?? []) {
      if (e.state !== 'ok') expect(['rate_limited', 'timeout', 'blocked']).toContain(e.outcome);
    }

    expect(await app.reload()).toMatchObject({ ok: true });
    expect(app.landing().stacks[0]?.pauses).toEqual([]);
    expect(await app.metricsText()).toMatch(/^cmdb_rate_limit_paused_until_timestamp_seconds\{stack="sim"\} 0$/m);
  });
});

describe('a stack that cannot be reached', () => {
  it('reads up 0 from the start and holds readiness back one attempt timeout at most', async () => {
    // Accepts connections and never answers: every attempt (the token fetch first) runs into its timeout.
    const sockets: Socket[] = [];
    const hung = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const port = (hung.address() as AddressInfo).port;
    const s = await startSimulator();
    sims.push(s);
    const healthy = stackFor(s, { name: 'healthy' });
    // Four attempts of 1.5 s and back-off: its first polls take over 8 s.
    const unreachable = testStack({
      name: 'unreachable',
      baseUrl: `http://127.0.0.1:${port}`,
      timeoutSeconds: 1.5,
      retries: { max: 3, minDelaySeconds: 1, maxDelaySeconds: 2 },
    });
    try {
      const { app } = await startExporter(configFor([healthy, unreachable]), { schedule: true, initialJitterMs: 0 });
      apps.push(app);
      const text = await app.metricsText();
      for (const e of enabledEndpoints(unreachable)) expect(text).toContain(`cmdb_endpoint_up{stack="unreachable",endpoint="${e}"} 0`);
      // No bound on how soon: the check below is that readiness came before the unreachable stack's
      // first polls ended (their four attempts and back-offs run on the same clock).
      await waitFor('readiness', async () => (app.readiness().ready ? true : undefined));
      // Ready while the unreachable stack's first polls are still running.
      const states = app.landing().stacks.find((st) => st.name === 'unreachable')?.endpoints.map((e) => e.state);
      expect(states).toContain('pending');
      expect(app.readiness().pending).toEqual([]);
    } finally {
      sockets.forEach((socket) => socket.destroy());
      hung.close();
    }
  });
});

describe('the status page after a failed poll', () => {
  it('shows the retry as the next poll, not the next scheduled poll an interval later', async () => {
    const s = await startSimulator({ faults: [{ endpoint: 'license', status: 503 }] });
    sims.push(s);
    // A fixed clock just after the hourly license poll's place in the hour: its next one is ~1 h away.
    const stack = stackFor(s, { name: 'retrying' });
    const hour = 1_800_000_000 - (1_800_000_000 % 3600);
    const at = hour + spreadOffset('retrying/license', 3600) + 1;
    const { app } = await startExporter(configFor([stack]), { schedule: true, initialJitterMs: 0, nowMs: () => at * 1000 });
    apps.push(app);
    const license = () => app.landing().stacks[0]?.endpoints.find((e) => e.endpoint === 'license');
    await waitFor('the license poll to fail', async () => (license()?.state === 'failing' ? true : undefined));
    await waitFor('the retry to be scheduled', async () => (license()?.nextPollAt === at + 30 ? true : undefined));
    expect(nextScheduledRun('retrying', 'license', 3600, at)).toBe(at - 1 + 3600);
  });
});
