/**
 * Issue 25: `cmdb-exporter backfill` reads the connector run history through the daemon's reader,
 * so at the real service's pace, with the default page size (2,000 rows) and timeoutSeconds (30),
 * a page that times out is asked again at half the size and the history arrives. Before, the
 * backfill had a pager of its own: page 0 of 2,000 rows was asked four times, each cut at the
 * timeout, every cmdb_connector_* and cmdb_merger_* family was left out and the command exited 1.
 *
 * The real pace is 40 s a 2,000-row page (about 2 ms a row) against a 30 s timeout. Time is scaled
 * down tenfold on both sides, so the test takes seconds instead of minutes: the real simulator
 * serves 2 ms a row (4 s a 2,000-row page, 2 s a 1,000-row page) and timeoutSeconds is 3.
 *
 * At that pace a scan that fails partway (a page that keeps failing) goes on at the next run from
 * that page, at the size the timeout taught the first run (issue 34): the pages read before are
 * not asked again, nor the page of 2,000 rows that could not fit the time.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runBackfill } from '../../src/backfill/command.js';
import { pageQuery } from '../../src/cmdb/readers/pages.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { runCommand } from '../helpers/backfill.js';

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

/** 40 connectors × 2 profiles × 30 daily runs: 2,400 rows, so page 0 of 2,000 is full. */
const SIZE = { connectors: 40, profilesPerConnector: 2, runsPerConnector: 30, actions: 2, jobsPerAction: 3, trackedAssets: 1, trackedUsers: 0 };
const MS_PER_ROW = 2;
const TIMEOUT_SECONDS = 3;

let sim: SimulatorServer;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ live: false, connectorPeriodSeconds: 86_400, historyDays: 30, size: SIZE, connectorPace: { msPerRow: MS_PER_ROW } });
  dir = mkdtempSync(join(tmpdir(), 'cmdb-backfill-pace-'));
});

afterAll(async () => {
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('backfill at the real service pace', () => {
  it('reads the connector history through the reader that halves a timed-out page: the connector and merger families are written', async () => {
    const config = join(dir, 'exporter.yaml');
    // The defaults but for the scaled timeout; a fast budget, since the pace under test is the service's.
    writeFileSync(
      config,
      stringify({
        stacks: [
          { name: 'slow', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, timeoutSeconds: TIMEOUT_SECONDS, connectTimeoutSeconds: 1, backfillRequestsPerMinute: 6000, rateLimitPerMinute: 6000 },
        ],
      }),
    );
    const out = join(dir, 'om');
    const stdout = new Sink();
    const stderr = new Sink();
    const code = await runBackfill(['--config', config, '--from', '10d', '--out', out], { stdout, stderr, env: { PATH: '' }, now: Date.now });

    const sizes = sim
      .requests()
      .filter((r) => r.endpoint === 'connector')
      .map((r) => Number(new URLSearchParams(r.rawQuery).get('size')));
    // One page at the configured 2,000 rows, cut at the timeout; then the same rows in halves.
    const said = `exit ${code}\n${stdout.text}\n${stderr.text.slice(-3000)}`;
    expect(sizes[0], said).toBe(2000);
    expect(sizes.filter((s) => s === 2000)).toHaveLength(1);
    expect(sizes.slice(1).every((s) => s < 2000)).toBe(true);
    expect(stderr.text).toContain('a connector history page timed out: asking for smaller pages');
    expect(stdout.text, said).not.toContain('missing');
    expect(code).toBe(0);

    // File by file: together they are over 500 MB, more than one string holds.
    const families = new Set<string>();
    const values = new Map<string, Set<string>>();
    for (const file of readdirSync(out).filter((f) => f.endsWith('.om'))) {
      const text = readFileSync(join(out, file), 'utf8');
      for (const family of ['cmdb_connector_info', 'cmdb_connector_last_run_timestamp_seconds', 'cmdb_merger_last_run_timestamp_seconds']) {
        if (new RegExp(`^${family}\\{`, 'm').test(text)) families.add(family);
      }
      for (const m of text.matchAll(/^cmdb_connector_last_run_timestamp_seconds\{([^}]*)\} (\d+) \d+$/gm)) {
        const seen = values.get(m[1] as string) ?? new Set<string>();
        values.set(m[1] as string, seen.add(m[2] as string));
      }
    }
    expect([...families].sort()).toEqual(['cmdb_connector_info', 'cmdb_connector_last_run_timestamp_seconds', 'cmdb_merger_last_run_timestamp_seconds']);
    // Every run of the range, not only the newest per connector: one connector's last run moves daily.
    const oneKey = [...values.keys()][0] ?? '';
    const runs = values.get(oneKey) ?? new Set<string>();
    expect(runs.size).toBeGreaterThanOrEqual(9);
  });

  it('a scan that fails partway, at the page size halved by a timeout, goes on at the next run from that page at that size', async () => {
    const config = join(dir, 'partway.yaml');
    writeFileSync(
      config,
      stringify({
        stacks: [
          {
            name: 'slow',
            baseUrl: sim.url,
            clientId: sim.clientId,
            secret: sim.secret,
            timeoutSeconds: TIMEOUT_SECONDS,
            connectTimeoutSeconds: 1,
            backfillRequestsPerMinute: 6000,
            rateLimitPerMinute: 6000,
            retries: { max: 1, minDelaySeconds: 0.01, maxDelaySeconds: 0.05 },
          },
        ],
      }),
    );
    const pages = (from: number) =>
      sim
        .requests()
        .slice(from)
        .filter((r) => r.endpoint === 'connector')
        .map((r) => `${new URLSearchParams(r.rawQuery).get('page')}@${new URLSearchParams(r.rawQuery).get('size')}`);
    // The second page of 1,000 rows keeps failing: page 0 of 2,000 timed out, page 0 of 1,000 is kept.
    sim.addFault({ endpoint: 'connector', query: pageQuery(1, 1000, '_time,desc'), status: 503 });
    const out = join(dir, 'partway');
    const args = ['--config', config, '--from', '2d', '--out', out];
    let from = sim.requests().length;
    const first = await runCommand(args);
    const firstPages = pages(from);
    sim.clearFaults();
    expect(first.code, first.stdout).toBe(1);
    expect(firstPages.slice(0, 2)).toEqual(['0@2000', '0@1000']);
    expect(firstPages.slice(2).every((p) => p === '1@1000')).toBe(true);

    from = sim.requests().length;
    const again = await runCommand(args);
    expect(again.code, `${again.stdout}\n${again.stderr.slice(-2000)}`).toBe(0);
    expect(again.stdout).toContain('with the 1 page of the connector history read so far: its scan goes on after them');
    // From the page that failed, at the size that fits the time: neither page 0 nor a page of 2,000 rows again.
    expect(pages(from)).toEqual(['1@1000', '2@1000']);
    const families = new Set(readdirSync(out).flatMap((f) => (f.endsWith('.om') ? [...readFileSync(join(out, f), 'utf8').matchAll(/^(cmdb_connector_info|cmdb_merger_last_run_timestamp_seconds)\{/gm)].map((m) => m[1]) : [])));
    expect([...families].sort()).toEqual(['cmdb_connector_info', 'cmdb_merger_last_run_timestamp_seconds']);
  });
});
