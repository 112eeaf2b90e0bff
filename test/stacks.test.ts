/** The stacks module: secrets are known to the scrubber before the first log line; reload effects. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { StackConfig } from '../src/config/types.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { sim } from './cmdb/helpers/sim.js';
import { configFor, startExporter, stackFor } from './helpers/exporter.js';
import { testStack } from './helpers/stack.js';

const SECRET = 'planted-secret-7f3a9c';
const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close(0)));
});

describe('secrets at start-up', () => {
  it.each([
    ['userAgent', { userAgent: `agent ${SECRET}` }],
    ['a tracked asset name', { track: { assets: [SECRET], users: [] } }],
  ])('a secret pasted into %s never reaches the start-up log line', async (_where, overrides) => {
    const stack = testStack({ name: 'a', baseUrl: 'http://127.0.0.1:9', auth: { kind: 'client', clientId: 'c', secret: SECRET, clientIdKey: 'clientID' }, ...overrides });
    const { app, logText } = await startExporter(configFor([stack], { logLevel: 'info' }));
    apps.push(app);
    const text = logText();
    expect(text).toContain('cmdb-exporter starting');
    expect(text).toContain('[REDACTED]');
    expect(text).not.toContain(SECRET);
  });
});

describe('reload', () => {
  const stack = (name: string) =>
    testStack({ name, baseUrl: 'http://127.0.0.1:9', auth: { kind: 'token', token: `tok-${name}-1234` } });

  it('a removed stack leaves no series behind; a kept one keeps its counters', async () => {
    let config = configFor([stack('a'), stack('b')]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    const before = await app.registry.metrics();
    expect(before).toContain('stack="b"');
    config = configFor([stack('a')]);
    const outcome = await app.reload();
    expect(outcome).toMatchObject({ ok: true });
    const after = await app.registry.metrics();
    expect(after).not.toContain('stack="b"');
    expect(after).toContain('cmdb_token_requests_total{stack="a",outcome="success"} 0');
    expect(after).toContain('cmdb_rate_limit_requests_per_minute{stack="a"}');
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

    config = configFor([stackFor(simulator, { userAgent: 'second' })]);
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"restarted":1') });
    // No scheduler here: the new runtime has not polled, yet nothing went missing.
    expect(app.readiness()).toEqual({ ready: true, pending: [] });
    expect(data(await app.metricsText())).toEqual(before);
    expect(await app.metricsText()).toContain('cmdb_endpoint_up{stack="sim",endpoint="license"} 1');

    // Its first poll replaces what was held.
    expect(await app.pollOnce()).toBe(true);
    expect(data(await app.metricsText())).toEqual(before);
  });

  it('a stack that is new (or re-added after removal) still waits for its first poll', async () => {
    let config = configFor([stackFor(simulator)]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    expect(app.readiness().ready).toBe(false);
    await app.pollOnce();
    config = configFor([]);
    await app.reload();
    config = configFor([stackFor(simulator)]);
    await app.reload();
    expect(app.readiness().ready).toBe(false);
    expect(await app.metricsText()).not.toContain('cmdb_connector_info{');
  });
});

describe('a stack paused by a server Retry-After (issue 11 #1)', () => {
  it('is on the status page model and /metrics until a reload ends it; its endpoints do not report up', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 999_999_999, times: 1 });
    // Short intervals: requests queued for a slot when the 429 arrives wait out the pause until
    // their poll's interval ends (the poll bound), and pollOnce waits for every poll.
    const intervals = Object.fromEntries(Object.keys(BUILTIN_SETTINGS.intervals).map((k) => [k, 2])) as StackConfig['intervals'];
    const config = configFor([stackFor(s as SimulatorServer, { intervals })]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    await app.pollOnce();
    const [model] = app.landing().stacks;
    expect(model?.pausedUntil).toBeGreaterThan(Date.now() / 1000 + 800);
    const paused = /^cmdb_rate_limit_paused_until_timestamp_seconds\{stack="sim"\} (\S+)$/m;
    expect(Number(paused.exec(await app.registry.metrics())?.[1])).toBeCloseTo(model?.pausedUntil ?? 0, 0);
    expect(model?.endpoints.find((e) => e.endpoint === 'license')).toMatchObject({ state: 'failing', outcome: 'rate_limited' });
    expect(await app.metricsText()).toMatch(/^cmdb_endpoint_up\{stack="sim",endpoint="license"\} 0$/m);
    // Whatever could not be polled because of the pause says why; nothing is left pending or up without data.
    for (const e of model?.endpoints ?? []) {
      if (e.state !== 'ok') expect(['rate_limited', 'timeout', 'blocked']).toContain(e.outcome);
    }

    expect(await app.reload()).toMatchObject({ ok: true });
    expect(app.landing().stacks[0]?.pausedUntil).toBeUndefined();
    expect(await app.registry.metrics()).toMatch(/^cmdb_rate_limit_paused_until_timestamp_seconds\{stack="sim"\} 0$/m);
  });
});
