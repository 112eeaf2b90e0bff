/**
 * The connector history at the real service's pace (issue 21): the real simulator serves connector
 * pages slowly (time per row), and writes runs while they are read; the exporter reads them
 * through its real client, and for the scan that outlasts its interval, its real scheduler.
 * Each case failed on the code before the change.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runKey } from '../../src/api/connector-runs.js';
import type { ConnectorRun } from '../../src/api/schemas.js';
import type { App } from '../../src/app.js';
import { renderLanding } from '../../src/server/landing.js';
import type { SimulatorOptions } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { makeClient } from '../cmdb/helpers/client.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { notYet, waitFor } from '../helpers/wait.js';
import type { StackOverrides } from '../helpers/stack.js';

/** 30 connectors × 2 profiles × 10 daily runs: 600 rows, 60 keys. */
const SIZE = { connectors: 30, profilesPerConnector: 2, runsPerConnector: 10 };

const sims: SimulatorServer[] = [];
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

async function simulator(opts: SimulatorOptions = {}): Promise<SimulatorServer> {
  const s = await startSimulator({ size: SIZE, connectorPeriodSeconds: 86_400, ...opts });
  sims.push(s);
  return s;
}

function client(s: SimulatorServer, overrides: StackOverrides = {}) {
  return makeClient(stackFor(s, { track: { assets: [], users: [] }, ...overrides } as never));
}

const connectorQueries = (s: SimulatorServer) => s.requests().filter((r) => r.endpoint === 'connector').map((r) => new URLSearchParams(r.rawQuery));
const sizes = (s: SimulatorServer) => connectorQueries(s).map((q) => Number(q.get('size')));

/** The newest `_time` per key in the simulator's history. */
function newestInSim(s: SimulatorServer): Map<string, number> {
  const out = new Map<string, number>();
  for (const row of s.dataset.history.all()) {
    const key = runKey(row as unknown as ConnectorRun);
    out.set(key, Math.max(row._time, out.get(key) ?? -Infinity));
  }
  return out;
}

describe('connector history at the real service pace', () => {
  it('a full scan longer than its interval finishes: not restarted, progress on the status page, incremental polls follow', async () => {
    // 6 pages of 100 rows at 4 s each: a 24 s scan on a 10 s interval. The test speeds the pages up
    // once it has seen what must happen while the scan runs (a skipped connectors start, a second
    // license poll), so the order of events does not hang on the machine's speed or the cron phase:
    // the license's second poll may come up to 15 s after start (a cron firing within half an
    // interval of the start-up poll is skipped).
    const s = await simulator({ live: true, connectorPace: { msPerRow: 40 } });
    const i = 10;
    const stack = stackFor(s, {
      timeoutSeconds: 10,
      paging: { connectorPageSize: 100, actionPageSize: 100, maxPages: 100 },
      intervals: { inventory: i, license: i, connectors: i, ingestion: i, actions: i, actionJobs: i, actionJobsRefresh: i, changes: i, queries: i },
    });
    const exporter = await startExporter(configFor([stack]), { schedule: true, initialJitterMs: 100 });
    const app: App = exporter.app;
    const licensePolls = () => s.requests().filter((r) => r.endpoint === 'license').length;
    try {
      let sawProgress = false;
      let sawOthersDuringScan = false;
      // Bounded against a hang (the order of events above is what is tested, not the speed).
      await waitFor(
        'the connectors exported',
        async () => {
          const html = renderLanding(app.landing());
          if (/full scan running: page \d+ of 6 read/.test(html)) sawProgress = true;
          const metrics = parseExposition(await app.metricsText());
          const exported = metrics.samples.some((m) => m.name === 'cmdb_connector_info');
          const skippedConnectorStarts = sampleValue(metrics, 'cmdb_poll_skipped_total', { group: 'connectors' }) ?? 0;
          if (!exported && !sawOthersDuringScan && skippedConnectorStarts >= 1 && licensePolls() >= 2) {
            sawOthersDuringScan = true;
            s.setConnectorPace({ msPerRow: 0 });
          }
          return exported || notYet({ sawProgress, skippedConnectorStarts, licensePolls: licensePolls() });
        },
        { timeoutMs: 240_000, intervalMs: 300 },
      );
      expect(sawProgress, 'the status page showed the scan in progress').toBe(true);
      expect(sawOthersDuringScan, 'while the scan ran, a connectors start was skipped and the license polled again').toBe(true);
      // One full scan, never restarted from page 0.
      const fullFirstPages = connectorQueries(s).filter((q) => q.get('page') === '0' && q.get('size') === '100');
      expect(fullFirstPages).toHaveLength(1);
      const text = await app.metricsText();
      expect(text).toMatch(/cmdb_connector_scan_pages_read\{stack="sim"\} 6/);
      expect(text).toMatch(/cmdb_endpoint_up\{stack="sim",endpoint="connector"\} 1/);
      // An incremental poll follows: a small sorted page.
      await waitFor('an incremental poll (a page of 25)', () => sizes(s).includes(25) || notYet(sizes(s)), { timeoutMs: 120_000, intervalMs: 300 });
    } finally {
      await app.close(1000);
    }
  }, 420_000);

  it('a page slower than timeoutSeconds is asked again at half the size, not at the same size, and the size is kept', async () => {
    // Pages of 200 rows are held past any timeout; pages of 100 take 2 s, a quarter of the 8 s
    // timeout: slow enough that the size is not grown back after the scan (a load only makes them
    // slower), with 6 s to spare. Before, 200 rows took 4 s and 100 rows 2 s against a 3 s timeout:
    // a second of margin either way.
    const s = await simulator({ connectorPace: { msPerRow: 20, holdAboveRows: 100 } });
    const { client: c, metrics } = client(s, { timeoutSeconds: 8, retries: { max: 2 }, paging: { connectorPageSize: 200, actionPageSize: 100, maxPages: 100 } });
    const runs = await c.get('connector');
    const newest = newestInSim(s);
    expect(runs).toHaveLength(newest.size);
    for (const run of runs) expect(run._time).toBe(newest.get(runKey(run)));
    expect(sizes(s)).toEqual([200, 100, 100, 100, 100, 100, 100]);
    // Kept for the next full scan, and shown.
    expect(await metrics.value('cmdb_connector_scan_page_size', { stack: 'sim' })).toBe(100);
  });

  it('runs written at the top during an incremental read are not taken for an unsorted history', async () => {
    const s = await simulator();
    // Pages of 25: a page boundary falls between two runs written in different seconds.
    const { client: c, metrics } = client(s, { paging: { connectorPageSize: 25, actionPageSize: 100, maxPages: 100 } });
    await c.get('connector');
    // 30 new runs (2 a second) within the margin, then 2 more written after every page read.
    for (let n = 0; n < 15; n++) {
      s.scenario.advance(1);
      s.scenario.runConnector(`${s.state().connectors[n]?.bridgeName}`, 'Error');
    }
    s.setConnectorPace({ insertsPerPage: 1 });
    s.clearRequests();
    const runs = await c.get('connector');
    expect(await metrics.value('cmdb_connector_sort_fallbacks_total', { stack: 'sim' })).toBe(0);
    expect(await metrics.value('cmdb_connector_scans_total', { stack: 'sim', kind: 'incremental' })).toBe(1);
    // More than one page was read, each sorted, none of them a full scan's.
    expect(connectorQueries(s).length).toBeGreaterThan(1);
    expect(connectorQueries(s).every((q) => q.get('sort') === '_time,desc' && Number(q.get('size')) <= 100)).toBe(true);
    expect(runs.filter((r) => r.status === 'Error').length).toBeGreaterThanOrEqual(30);
  });

  it('an incremental poll of an unchanged history reads one small page', async () => {
    const s = await simulator();
    const { client: c } = client(s);
    await c.get('connector');
    s.clearRequests();
    await c.get('connector');
    expect(sizes(s)).toEqual([25]);
    expect(s.requests().filter((r) => r.endpoint === 'connector').reduce((n, r) => n + r.bytes, 0)).toBeLessThan(64 * 1024);
  });

  it('a history longer than paging.maxPages keeps the newest run of every connector it keeps', async () => {
    const s = await simulator();
    const { client: c, metrics } = client(s, { paging: { connectorPageSize: 100, actionPageSize: 100, maxPages: 2 } });
    const runs = await c.get('connector');
    expect(await metrics.value('cmdb_pages_truncated_total', { stack: 'sim', endpoint: 'connector' })).toBe(1);
    const newest = newestInSim(s);
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) expect(run._time, runKey(run)).toBe(newest.get(runKey(run)));
  });
});
