/**
 * A backfill's connector history read kept page by page (src/backfill/connector-scan.ts): what a
 * page keeps of itself folds back into the same rows, the pages kept read back as the scan they
 * leave (or none, when the line of pages is broken), and, in-process against the simulator, a
 * scan that fails partway goes on at the next run from the page that failed: no page before it is
 * asked again, the samples are those of an uninterrupted run, none twice, and no event text is kept.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ConnectorRun } from '../../src/api/schemas.js';
import { ANSWERS_FILE } from '../../src/backfill/answers.js';
import { keptScan, RangeRows } from '../../src/backfill/connector-scan.js';
import { pageQuery } from '../../src/cmdb/readers/pages.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { openMetricsSamples, runCommand } from '../helpers/backfill.js';

const T0 = 1_785_000_000;
const DAY = 86_400;
const run = (bridge: string, time: number): ConnectorRun => ({ bridge_name: bridge, profile: 'prod', status: 'Success', _time: time }) as ConnectorRun;

describe('the rows a page keeps', () => {
  it('folded again in the same order, leave the range rows as the pages themselves did', () => {
    const pages = [
      [run('a', T0 + 50), run('a', T0 - 10), run('b', T0 - 5), run('a', T0 - 20)],
      [run('b', T0 - 1), run('a', T0 + 50), run('c', T0 + 2 * DAY), run('b', T0 - 900)],
      [run('c', T0 - 3), run('a', T0 + 60)],
    ];
    const whole = new RangeRows(T0, T0 + DAY, 'UTC');
    const took = pages.map((p) => whole.add(p));
    // Past `to`, older than the newest before `from`, and a row met twice are not taken.
    expect(took.map((t) => t.map((r) => `${r.bridge_name}@${r._time as number - T0}`))).toEqual([['a@50', 'a@-10', 'b@-5'], ['b@-1'], ['c@-3', 'a@60']]);
    const again = new RangeRows(T0, T0 + DAY, 'UTC');
    again.add(took.flat());
    expect(again.rows()).toEqual(whole.rows());
  });
});

describe('the scan the kept pages leave', () => {
  const page = (pagesRead: number, startedAt = T0, runs: ConnectorRun[] = []) => ({ sort: '_time,desc', page: pagesRead, size: 10, startedAt, pagesRead, rowsRead: pagesRead * 10, bytes: 100 * pagesRead, runs });

  it('is the last page of an unbroken line from the first, with the rows of every page of it', () => {
    const kept = keptScan([page(1, T0, [run('a', T0)]), page(2, T0, [run('b', T0)]), page(3, T0)]);
    expect(kept?.position).toMatchObject({ page: 3, pagesRead: 3, startedAt: T0 });
    expect(kept?.runs.map((r) => r.bridge_name)).toEqual(['a', 'b']);
    expect(kept?.pages).toBe(3);
    expect(keptScan([])).toBeUndefined();
  });

  it('leaves behind the pages of a scan that started over', () => {
    const kept = keptScan([page(1, T0, [run('old', T0)]), page(2, T0), page(1, T0 + 60, [run('new', T0)]), page(2, T0 + 60)]);
    expect(kept?.position.startedAt).toBe(T0 + 60);
    expect(kept?.runs.map((r) => r.bridge_name)).toEqual(['new']);
  });

  it('is none when the line is broken: a page that does not read back, a page missing, another scan\'s page', () => {
    expect(keptScan([page(1), { nonsense: true }, page(3)])).toBeUndefined();
    expect(keptScan([page(1), page(3)])).toBeUndefined();
    expect(keptScan([page(1), page(2, T0 + 1)])).toBeUndefined();
    expect(keptScan([page(1), { ...page(2), runs: 'not a list' }])).toBeUndefined();
  });
});

describe('a connector history scan that fails partway, then the same command again', () => {
  const PAGE = 10;
  let sim: SimulatorServer;
  let dir: string;
  let config: string;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 11, live: false, connectorPeriodSeconds: DAY, historyDays: 3, size: { runsPerConnector: 4, connectors: 8, actions: 2, jobsPerAction: 3 } });
    dir = mkdtempSync(join(tmpdir(), 'cmdb-backfill-scan-'));
    config = join(dir, 'exporter.yaml');
    const state = sim.state();
    writeFileSync(
      config,
      stringify({
        stacks: [
          {
            name: 'scan',
            baseUrl: sim.url,
            clientId: sim.clientId,
            secret: sim.secret,
            backfillRequestsPerMinute: 6000,
            rateLimitPerMinute: 6000,
            retries: { max: 0 },
            paging: { connectorPageSize: PAGE },
            track: { assets: state.trackedAssets.slice(0, 1), users: [] },
          },
        ],
      }),
    );
  });

  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('goes on from the page that failed: no page before it asked again, the samples of an uninterrupted run, none twice, no event text kept', async () => {
    const to = String(Math.floor(Date.now() / 1000) - 3 * 3600);
    const from = String(Number(to) - 2 * DAY);
    const args = (out: string) => ['--config', config, '--from', from, '--to', to, '--out', out, '--instance', 'x:1'];
    const pages = (start: number) =>
      sim
        .requests()
        .slice(start)
        .filter((r) => r.endpoint === 'connector')
        .map((r) => Number(new URLSearchParams(r.rawQuery).get('page')));
    const whole = Math.ceil(sim.state().counts.connectorRuns / PAGE);
    expect(whole).toBeGreaterThan(4);

    // Page 3 answers 503 until the fault is cleared: the connector history is missing, the rest is written.
    const out = join(dir, 'out');
    sim.addFault({ endpoint: 'connector', query: pageQuery(3, PAGE, '_time,desc'), status: 503 });
    let start = sim.requests().length;
    const failed = await runCommand(args(out));
    expect(failed.code, failed.stdout).toBe(1);
    expect(failed.stdout).toContain('connector run history');
    expect(pages(start)).toEqual([0, 1, 2, 3]);
    // The pages kept are the daemon's disk form: none of the event texts the simulator writes (an API key, a password, URLs).
    const journal = readFileSync(join(out, ANSWERS_FILE), 'utf8');
    expect(journal.split('\n').filter((l) => l.includes('"p":'))).toHaveLength(3);
    expect(journal).not.toMatch(/api key|password|Fetched \d+ records/);
    sim.clearFaults();

    start = sim.requests().length;
    const again = await runCommand(args(out));
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toContain('with the 3 pages of the connector history read so far: its scan goes on after them');
    expect(pages(start)).toEqual(Array.from({ length: whole - 3 }, (_, i) => i + 3));

    const reference = join(dir, 'reference');
    expect((await runCommand(args(reference))).code).toBe(0);
    const resumed = openMetricsSamples(out);
    const uninterrupted = openMetricsSamples(reference);
    const twice = [...resumed].filter(([, times]) => new Set(times).size !== times.length).map(([series]) => series);
    expect(twice).toEqual([]);
    expect([...resumed.keys()].some((k) => k.startsWith('cmdb_connector_info{'))).toBe(true);
    expect(resumed).toEqual(uninterrupted);
  });
});
