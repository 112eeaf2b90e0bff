/**
 * End to end with a real Prometheus: the simulator (in-process, so scenarios can be switched), the
 * BUILT exporter as a child process, and `prometheus` as a child process scraping it every 2s with
 * the project's generated rules (every `for:` shortened to 0s). Proves that the exporter is
 * scrapeable and lint-clean, that every dashboard query finds data, that the four headline alerts
 * fire and resolve on real data, and that no secret reaches a log line, /metrics or the status page.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { fastRuleFiles, JOB, startPrometheus, type Alert, type PrometheusApi, type RunningPrometheus } from './harness/prometheus.js';
import { allDashboardQueries, grafanaValues, healthyConnector, isoDay, succeededAction } from './harness/queries.js';
import { baseEnv, http, leakedSecrets, makeTempDir, removeDir, REPO_ROOT, requirePart } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';
import { exampleQueries } from '../helpers/queries.js';

const STACK = 'e2e-sim';
const STALE_CONNECTOR = 'stale_source';
// Not the simulator's public default: a value that can only appear in output if the exporter leaks it.
const CLIENT_SECRET = `e2e-secret-${randomBytes(8).toString('hex')}`;

/**
 * The one problem `promtool check metrics` reports, and why it is accepted: the metric name
 * cmdb_license_days_until_expiry is fixed by the catalogue (a released name users' alerts rely on),
 * and promlint rejects any `days` name component. Everything else must be clean.
 */
const KNOWN_PROMLINT_PROBLEM = 'cmdb_license_days_until_expiry use base unit "seconds" instead of "days"';

let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let prometheus: RunningPrometheus;
let api: PrometheusApi;
let promtool: string;

beforeAll(async () => {
  requirePart('prometheus');
  promtool = requirePart('promtool');
  dir = makeTempDir('prometheus');
  sim = await startSimulator({ secret: CLIENT_SECRET, live: false });
  // A source that stopped running three days ago, its rows shaped like the real service's: _time and
  // _utc, no start or end time.
  sim.scenario.addConnector(STALE_CONNECTOR, 'Success', 3 * 86_400);
  const state = sim.state();
  // No `stacks` in the file: the stack comes from the environment, as in the container.
  const configFile = writeExporterConfig(dir, {
    // The most verbose level, so that the secret check below covers every log statement there is.
    logLevel: 'trace',
    defaults: {
      rateLimitPerMinute: 6000,
      actionJobsPerMinute: 6000,
      retries: { max: 1, minDelaySeconds: 0.1, maxDelaySeconds: 0.5 },
      intervals: FAST_INTERVALS,
      track: { assets: state.trackedAssets, users: state.trackedUsers },
      queries: exampleQueries(),
    },
  });
  exporter = await startExporter({
    args: ['--config', configFile],
    env: { CMDB_BASE_URL: sim.url, CMDB_CLIENT_ID: sim.clientId, CMDB_SECRET: CLIENT_SECRET, CMDB_STACK: STACK },
  });
  await waitUntilReady(exporter);
  prometheus = await startPrometheus({ dir, target: `127.0.0.1:${exporter.port}`, ruleFiles: fastRuleFiles() });
  api = prometheus.api;
});

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

/** Active alerts of this stack named `name` whose labels include `labels`. */
function matching(alerts: readonly Alert[], name: string, labels: Record<string, string> = {}): Alert[] {
  const want: Record<string, string> = { alertname: name, stack: STACK, ...labels };
  return alerts.filter((a) => Object.entries(want).every(([k, v]) => a.labels[k] === v));
}

interface Expected {
  readonly name: string;
  readonly labels?: Record<string, string>;
}

const describeAlert = (e: Expected) => `${e.name}${JSON.stringify(e.labels ?? {})}`;

async function waitForAlerts(what: string, expected: readonly Expected[], wanted: 'firing' | 'gone'): Promise<void> {
  await waitFor(
    what,
    async () => {
      const alerts = await api.alerts();
      const wrong = expected.filter((e) => {
        const found = matching(alerts, e.name, e.labels);
        return wanted === 'firing' ? !found.some((a) => a.state === 'firing') : found.length > 0;
      });
      if (wrong.length === 0) return done(undefined);
      return notYet({ [wanted === 'firing' ? 'notFiring' : 'stillActive']: wrong.map(describeAlert), alerts: alerts.map((a) => ({ ...a.labels, state: a.state })) });
    },
    { timeoutMs: 90_000, intervalMs: 1000 },
  );
}

describe('the built exporter under a real Prometheus', () => {
  it('Prometheus scrapes the exporter: the cmdb-exporter target is up', async () => {
    const target = await waitFor(
      'the cmdb-exporter target to be up',
      async () => {
        const targets = await api.targets();
        const mine = targets.find((t) => t.labels.job === JOB && t.scrapeUrl.includes(`:${exporter.port}/metrics`));
        return mine?.health === 'up' ? done(mine) : notYet(targets);
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    expect(target.lastError).toBe('');
    const up = await api.query(`up{job="${JOB}"}`);
    expect(up.map((s) => s.value[1])).toEqual(['1']);
  });

  it('promtool check metrics reports nothing about /metrics but the one documented name from the catalogue', async () => {
    const metrics = await http(`${exporter.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain(`cmdb_license_days_until_expiry{stack="${STACK}"}`);
    const lint = await runToCompletion(promtool, ['check', 'metrics'], { cwd: REPO_ROOT, env: baseEnv(), input: metrics.text, timeoutMs: 30_000 });
    const lines = `${lint.stdout}\n${lint.stderr}`.split('\n').map((l) => l.trim()).filter(Boolean);
    expect(lines).toEqual([KNOWN_PROMLINT_PROBLEM]);
    // promtool's exit code for lint problems (as opposed to 1 for a parse error).
    expect(lint.code).toBe(3);
  });

  it('every dashboard query returns at least one series once the running ingestion run has finished and the data was rebuilt', async () => {
    sim.scenario.finishIngestion('success');
    // A rebuild gives the saved queries a count at the rebuild before (their change across rebuilds).
    sim.scenario.rebuild();
    await waitFor(
      'cmdb_query_previous_records after a rebuild',
      async () => {
        const s = await api.query(`cmdb_query_previous_records{stack="${STACK}"}`);
        return s.length === exampleQueries().length ? done(undefined) : notYet(s);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await waitFor(
      'cmdb_ingestion_next_run_timestamp_seconds after finishIngestion',
      async () => {
        const s = await api.query(`cmdb_ingestion_next_run_timestamp_seconds{stack="${STACK}"}`);
        return s.length > 0 ? done(undefined) : notYet(s);
      },
      { timeoutMs: 45_000, intervalMs: 1000 },
    );
    const values = await grafanaValues(api, STACK);
    const queries = allDashboardQueries(values);
    expect(queries.length).toBeGreaterThan(50);
    // Fails with every query that found nothing and Prometheus's last answer to it.
    await waitFor(
      'every dashboard query to return data',
      async () => {
        const failing: Array<{ where: string; expr: string; response: unknown }> = [];
        for (const q of queries) {
          const response = await api.query(q.expr).catch((err: unknown) => String(err));
          if (!Array.isArray(response) || response.length === 0) failing.push({ ...q, response });
        }
        return failing.length === 0 ? done(undefined) : notYet(failing);
      },
      { timeoutMs: 60_000, intervalMs: 2000 },
    );
  });

  // Shared by the firing and the resolving test: what was switched.
  let connector = '';
  let actionId = '';
  const expected = (): Expected[] => [
    { name: 'CmdbConnectorError', labels: { connector } },
    { name: 'CmdbLicenseExpiresVerySoon' },
    { name: 'CmdbIngestionRunFailed' },
    { name: 'CmdbActionJobFailed', labels: { action_id: actionId } },
  ];

  it('CmdbConnectorError, CmdbLicenseExpiresVerySoon, CmdbIngestionRunFailed and CmdbActionJobFailed fire when the CMDB shows those failures', async () => {
    connector = await healthyConnector(api, STACK);
    actionId = await succeededAction(api, STACK);
    // None of them is active before the switch: what fires below is caused by it.
    const before = await api.alerts();
    expect(expected().flatMap((e) => matching(before, e.name, e.labels)).map((a) => a.labels)).toEqual([]);

    sim.scenario.runConnector(connector, 'Error');
    sim.scenario.setLicenseExpiry(isoDay(Date.now() + 5 * 86_400_000));
    sim.scenario.runIngestion('failed');
    sim.scenario.runActionJob(actionId, 'FAILED');
    await waitForAlerts('the four alerts to fire', expected(), 'firing');

    const alerts = await api.alerts();
    const [connectorAlert] = matching(alerts, 'CmdbConnectorError', { connector });
    expect(connectorAlert?.annotations.summary).toBe('CMDB connector run failed.');
    expect(connectorAlert?.annotations.description).toContain(`The newest run of connector ${connector}`);
    expect(matching(alerts, 'CmdbLicenseExpiresVerySoon')[0]?.labels.severity).toBe('critical');
  });

  it('the four alerts are gone once the CMDB shows success again', async () => {
    expect(connector && actionId, 'the firing test chose a connector and an Action').toBeTruthy();
    sim.scenario.runConnector(connector, 'Success');
    sim.scenario.setLicenseExpiry(isoDay(Date.now() + 365 * 86_400_000));
    sim.scenario.runIngestion('success');
    sim.scenario.runActionJob(actionId, 'SUCCESS');
    await waitForAlerts('the four alerts to resolve', expected(), 'gone');
  });

  it('CmdbConnectorNotRun fires for a connector whose newest _time is three days old, on rows without start or end', async () => {
    const rows = sim.state().connectors.find((c) => c.bridgeName === STALE_CONNECTOR);
    expect(rows, 'the stale connector exists in the simulator').toBeDefined();
    const metrics = await http(`${exporter.url}/metrics`);
    const lines = metrics.text.split('\n').filter((l) => l.includes(`connector="${STALE_CONNECTOR}"`));
    expect(lines.some((l) => l.startsWith('cmdb_connector_last_run_timestamp_seconds{'))).toBe(true);
    // The rows carry no start or end: those families have no series for it.
    expect(lines.filter((l) => /^cmdb_connector_last_run_(start|end)_timestamp_seconds\{/.test(l))).toEqual([]);
    await waitForAlerts('CmdbConnectorNotRun for the stale connector', [{ name: 'CmdbConnectorNotRun', labels: { connector: STALE_CONNECTOR } }], 'firing');
    const [alert] = matching(await api.alerts(), 'CmdbConnectorNotRun', { connector: STALE_CONNECTOR });
    // Per connector over its profiles: no profile label; the age is about three days.
    expect(alert?.labels.profile).toBeUndefined();
    expect(alert?.annotations.description).toMatch(new RegExp(`^The newest run of connector ${STALE_CONNECTOR} of stack ${STACK}, over all its profiles, was written 3d `));
    // The healthy connectors do not fire it.
    const others = matching(await api.alerts(), 'CmdbConnectorNotRun').filter((a) => a.labels.connector !== STALE_CONNECTOR);
    expect(others.map((a) => a.labels.connector)).toEqual([]);
  });

  it('no secret (client secret, issued tokens, planted secrets) appears in any log line, /metrics or the status page', async () => {
    const secrets = [CLIENT_SECRET, ...sim.issuedTokens(), ...PLANTED_SECRETS];
    expect(sim.issuedTokens().length).toBeGreaterThan(0);
    // The planted secrets were really fetched: they sit in these responses.
    const polled = new Set(sim.requests().map((r) => r.endpoint));
    for (const endpoint of ['connector', 'data_ingestion_detail', 'action_jobs'] as const) expect(polled).toContain(endpoint);

    const logs = exporter.proc.output();
    expect(logs).toContain('"secret":"[REDACTED]"');
    expect(logs).toContain('"logLevel":"trace"');
    expect(leakedSecrets(logs, secrets), 'secrets in the log').toEqual([]);
    const metrics = await http(`${exporter.url}/metrics`);
    expect(metrics.text).toContain('cmdb_connector_info{');
    expect(leakedSecrets(metrics.text, secrets), 'secrets in /metrics').toEqual([]);
    const page = await http(`${exporter.url}/`);
    expect(page.text).toContain(STACK);
    expect(leakedSecrets(page.text, secrets), 'secrets on the status page').toEqual([]);
  });
});
