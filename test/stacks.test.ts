/** The stacks module: secrets are known to the scrubber before the first log line; reload effects. */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../src/app.js';
import { DATA_ENDPOINTS } from '../src/api/endpoints.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { configFor, startExporter } from './helpers/exporter.js';
import { waitFor } from './helpers/daemon.js';
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
      const metric = app.registry.getSingleMetric('cmdb_rate_limit_wait_seconds_total');
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
    await waitFor(async () => ((await app.registry.metrics()).includes(line) ? true : undefined), 10_000, line);
    expect(sim.requests().filter((r) => r.endpoint === 'action_jobs')).toHaveLength(1);
    expect(app.landing().stacks[0]?.jobBacklog).toBe(actions - 1);
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
