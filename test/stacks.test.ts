/** The stacks module: secrets are known to the scrubber before the first log line; reload effects. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { configFor, stackFor, startExporter } from './helpers/exporter.js';
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
  let sim: SimulatorServer;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 7, live: false });
  });
  afterAll(() => sim.close());

  it('keeps the data series and readiness until the new runtime has polled', async () => {
    let config = configFor([stackFor(sim, { userAgent: 'first' })]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    expect(await app.pollOnce()).toBe(true);
    expect(app.readiness().ready).toBe(true);
    const data = (text: string) => text.split('\n').filter((l) => l.startsWith('cmdb_assets{') || l.startsWith('cmdb_connector_info{'));
    const before = data(await app.metricsText());
    expect(before.length).toBeGreaterThan(1);

    config = configFor([stackFor(sim, { userAgent: 'second' })]);
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
    let config = configFor([stackFor(sim)]);
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    expect(app.readiness().ready).toBe(false);
    await app.pollOnce();
    config = configFor([]);
    await app.reload();
    config = configFor([stackFor(sim)]);
    await app.reload();
    expect(app.readiness().ready).toBe(false);
    expect(await app.metricsText()).not.toContain('cmdb_connector_info{');
  });
});
