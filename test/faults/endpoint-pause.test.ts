/**
 * Issue 25: one endpoint answering 503 with a Retry-After for good (a broken license backend behind
 * the same gateway) pauses that endpoint's group only: every other endpoint is polled at its
 * interval, the connector scan completes, and the status page names the 503. Before, every license
 * retry re-armed a pause of the whole stack: 22 requests in 300 s, the stack silent for a minute at
 * a time, the first connector scan never finished, and the status page said "paused by a 429".
 *
 * The real simulator and the real daemon (scheduler, poll deadlines, client), at the real pace of
 * the connector history scaled tenfold (2 ms a row, timeoutSeconds 3) and a Retry-After of 25 s.
 * Bounded by events: the test waits for the license's fourth 503 and the end of the connector scan.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { renderLanding } from '../../src/server/landing.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { notYet, waitFor } from '../helpers/wait.js';

const RETRY_AFTER = 25;

let sim: SimulatorServer | undefined;
let app: App | undefined;
afterAll(async () => {
  await app?.close(1000);
  await sim?.close();
});

describe('one endpoint answering 503 with Retry-After for good', () => {
  it('pauses its group only: the others are polled at their intervals, the connector scan completes, the status page names the 503', { timeout: 240_000 }, async () => {
    sim = await startSimulator({
      live: true,
      connectorPeriodSeconds: 86_400,
      size: { connectors: 40, profilesPerConnector: 2, runsPerConnector: 30 },
      connectorPace: { msPerRow: 2 },
    });
    const s = sim;
    s.addFault({ endpoint: 'license', status: 503, retryAfterSeconds: RETRY_AFTER });
    const stack = stackFor(s, {
      rateLimitPerMinute: 600,
      timeoutSeconds: 3,
      connectTimeoutSeconds: 1,
      paging: { connectorPageSize: 500, actionPageSize: 100, maxPages: 100 },
      retries: { max: 3, minDelaySeconds: 0.5, maxDelaySeconds: 5, maxRetryAfterSeconds: 60 },
      intervals: { inventory: 10, license: 60, connectors: 10, ingestion: 10, actions: 10, actionJobs: 10, actionJobsRefresh: 3600, changes: 10, queries: 3600 },
    });
    ({ app } = await startExporter(configFor([stack]), { schedule: true, initialJitterMs: 100 }));
    const a = app;
    const of = (endpoint: string) => s.requests().filter((r) => r.endpoint === endpoint);
    const metrics = async () => parseExposition(await a.metricsText());

    let html = '';
    await waitFor(
      "the license's fourth 503, the connector scan done and the status page naming the 503",
      async () => {
        const m = await metrics();
        const scanDone = sampleValue(m, 'cmdb_endpoint_up', { endpoint: 'connector' }) === 1;
        html = renderLanding(a.landing());
        const named = /paused by a 503/.test(html);
        return (of('license').length >= 4 && scanDone && named) || notYet({ license: of('license').length, scanDone, named });
      },
      { timeoutMs: 200_000, intervalMs: 500 },
    );
    const license = of('license');
    expect(license.length, 'license asked four times').toBeGreaterThanOrEqual(4);
    expect(license.every((r) => r.status === 503)).toBe(true);

    // The connector scan (5 pages of 500 rows) completed while the license was paused.
    const m = await metrics();
    expect(sampleValue(m, 'cmdb_endpoint_up', { endpoint: 'connector' })).toBe(1);
    expect(sampleValue(m, 'cmdb_connector_scan_pages_read', {})).toBe(5);
    expect(m.samples.some((x) => x.name === 'cmdb_connector_info')).toBe(true);

    // While the license waited out each Retry-After, the ingestion group (every 10 s) went on.
    const ingestion = of('data_ingestion').map((r) => r.at);
    for (let k = 1; k < license.length; k++) {
      const from = (license[k - 1] as { at: number }).at;
      const to = (license[k] as { at: number }).at;
      if (to - from < (RETRY_AFTER - 1) * 1000) continue;
      expect(ingestion.filter((t) => t > from && t < to).length, `data_ingestion polled between license requests ${k - 1} and ${k}`).toBeGreaterThanOrEqual(1);
    }
    expect(sampleValue(m, 'cmdb_endpoint_up', { endpoint: 'data_ingestion' })).toBe(1);
    expect(sampleValue(m, 'cmdb_endpoint_up', { endpoint: 'metrics_data' })).toBe(1);
    // The stack as a whole is not paused: only the license's group is.
    expect(sampleValue(m, 'cmdb_rate_limit_paused_until_timestamp_seconds', {})).toBe(0);

    // The status page names the status that set the pause.
    expect(html).toMatch(/paused by a 503/);
    expect(html).not.toMatch(/paused by a 429/);
  });
});
