/**
 * A full scan of the connector run history that outlasts three poll intervals, under a real
 * Prometheus with the shipped rules (every `for:` at 0s): while the scan runs, the connector
 * endpoint's last success ages past the stale limit, yet CmdbEndpointDataStale stays quiet for it,
 * because the scan is making progress (one that gets no page for its stall limit fails, and
 * CmdbEndpointDown speaks of it). A control rule with the expression from before the change
 * (`time() - last success > 3 × interval`, connector only) proves the scan did reach that age.
 *
 * The simulator serves connector pages at 250 ms a row: a 25-row incremental page takes 6.25 s, a
 * 50-row page of the full scan 12.5 s, and the 600-row history 12 pages, 150 s, against a 10 s
 * interval (stale after 30 s). The scan is ended by the test (the pace set back to 0) once the
 * checks are made, not by time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { stopAllAndCheck } from './harness/processes.js';
import { fastRuleFiles, JOB, startPrometheus, type PrometheusApi } from './harness/prometheus.js';
import { makeTempDir, removeDir, requirePart } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'e2e-scan';
const CONTROL = 'ConnectorOlderThanThreeIntervals';
/** The stale condition of CmdbEndpointDataStale before a running scan was left out, connector only. */
const CONTROL_RULES = stringify({
  groups: [
    {
      name: 'control',
      rules: [
        {
          alert: CONTROL,
          expr: `time() - cmdb_endpoint_last_success_timestamp_seconds{job="${JOB}", endpoint="connector"} > 3 * cmdb_endpoint_poll_interval_seconds{job="${JOB}", endpoint="connector"}`,
        },
      ],
    },
  ],
});

let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let api: PrometheusApi;

beforeAll(async () => {
  requirePart('prometheus');
  dir = makeTempDir('scan-stale');
  // 30 connectors × 2 profiles × 10 daily runs: 600 rows, 12 pages of 50.
  sim = await startSimulator({ live: false, size: { connectors: 30, profilesPerConnector: 2, runsPerConnector: 10 }, connectorPeriodSeconds: 86_400 });
  const configFile = writeExporterConfig(dir, {
    stacks: [
      {
        name: STACK,
        baseUrl: sim.url,
        clientId: sim.clientId,
        secret: sim.secret,
        rateLimitPerMinute: 6000,
        intervals: FAST_INTERVALS,
        // The shortest period allowed: the scan this test watches starts a minute after the first.
        connectorFullScanInterval: 60,
        paging: { connectorPageSize: 50 },
        track: { assets: [], users: [] },
      },
    ],
  });
  exporter = await startExporter({ args: ['--config', configFile], env: {} });
  await waitUntilReady(exporter);
  ({ api } = await startPrometheus({ dir, target: `127.0.0.1:${exporter.port}`, ruleFiles: new Map([...fastRuleFiles(), ['control.yml', CONTROL_RULES]]) }));
});

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

/** The value of a query with one series, or undefined without one. */
async function one(expr: string): Promise<number | undefined> {
  const result = await api.query(expr);
  if (result.length > 1) throw new Error(`${expr}: ${result.length} series`);
  return result[0] ? Number(result[0].value[1]) : undefined;
}

const inProgress = `cmdb_connector_scan_in_progress{job="${JOB}", stack="${STACK}"}`;
const scanStart = `cmdb_connector_scan_start_timestamp_seconds{job="${JOB}", stack="${STACK}"}`;
const lastSuccess = `cmdb_endpoint_last_success_timestamp_seconds{job="${JOB}", stack="${STACK}", endpoint="connector"}`;

describe('a full connector scan longer than three poll intervals', () => {
  it('does not raise CmdbEndpointDataStale for the connector endpoint while it runs', async () => {
    // The first scan (at full speed) is done: the connector endpoint has succeeded once.
    await waitFor('the connector endpoint scraped with a last success', async () => ((await one(lastSuccess)) ?? 0) > 0 ? done(undefined) : notYet(await api.query(lastSuccess)), { timeoutMs: 30_000, intervalMs: 1000 });
    sim.setConnectorPace({ msPerRow: 250 });

    // The periodic full scan starts within connectorFullScanInterval of the first.
    const start = await waitFor(
      'the periodic full scan to run',
      async () => ((await one(inProgress)) === 1 ? done(await one(scanStart)) : notYet(await api.query(inProgress))),
      { timeoutMs: 120_000, intervalMs: 1000 },
    );

    // The connector's last success grows older than 3 intervals: the control rule fires, for at
    // least five evaluations (2 s apart), while the same scan is still running.
    await waitFor(
      `${CONTROL} firing for five evaluations`,
      async () => {
        const firing = await one(`count_over_time(ALERTS{alertname="${CONTROL}", alertstate="firing", stack="${STACK}"}[5m])`);
        return (firing ?? 0) >= 5 ? done(undefined) : notYet({ firing, alerts: await api.alerts() });
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    expect(await one(inProgress), 'the scan is still running').toBe(1);
    expect(await one(scanStart), 'and it is the same scan').toBe(start);
    const age = await one(`time() - ${lastSuccess}`);
    expect(age).toBeGreaterThan(30);

    // The shipped alert has not been active for the connector endpoint at any evaluation.
    expect(await api.query(`ALERTS{alertname="CmdbEndpointDataStale", stack="${STACK}"}`)).toEqual([]);
    expect(await api.query(`count_over_time(ALERTS{alertname="CmdbEndpointDataStale", stack="${STACK}"}[10m])`)).toEqual([]);
  });

  it('the scan completes once the pages come quickly again, and the connector endpoint is fresh', async () => {
    const before = (await one(lastSuccess)) ?? 0;
    sim.setConnectorPace({});
    await waitFor(
      'the scan to complete and the connector endpoint to succeed',
      async () => {
        const [running, success] = [await one(inProgress), await one(lastSuccess)];
        return running === 0 && (success ?? 0) > before ? done(undefined) : notYet({ running, success, before });
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await waitFor(
      `${CONTROL} resolved`,
      async () => {
        const alerts = (await api.alerts()).filter((a) => a.labels.alertname === CONTROL);
        return alerts.length === 0 ? done(undefined) : notYet(alerts);
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    expect(await api.query(`count_over_time(ALERTS{alertname="CmdbEndpointDataStale", stack="${STACK}"}[10m])`)).toEqual([]);
  });
});
