/**
 * A day whose counts the CMDB will not give (every `data?date=` of that day answers 503, all
 * retries included) has no samples in the backfill: cmdb_assets and cmdb_users end with the day
 * before's last step and resume with the next day's first, and the summary names the day. Before,
 * the day before's counts were carried through it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { openMetricsSamples, runCommand } from '../helpers/backfill.js';

const DAY = 86_400;
let sim: SimulatorServer;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ live: false, connectorPeriodSeconds: DAY, historyDays: 6, size: { runsPerConnector: 6, connectors: 3, actions: 2 } });
  dir = mkdtempSync(join(tmpdir(), 'cmdb-fault-backfill-day-'));
});

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a day whose counts fail', () => {
  it('has no samples, the series resume the next day, and the summary names the day (exit 1)', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const dayStart = (Math.floor(nowS / DAY) - 3) * DAY;
    const failing = new Date(dayStart * 1000).toISOString().slice(0, 10);
    sim.addFault({ endpoint: 'metrics_data', query: `date=${failing}`, status: 503 });
    const config = join(dir, 'exporter.yaml');
    // The daemon's retries as they are by default: the day fails after all of them.
    writeFileSync(config, stringify({ stacks: [{ name: 'f', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, backfillRequestsPerMinute: 6000, retries: { minDelaySeconds: 0.01, maxDelaySeconds: 0.05 } }] }));
    const out = join(dir, 'out');
    const r = await runCommand(['--config', config, '--from', '5d', '--out', out, '--instance', 'x:1']);
    expect(r.code).toBe(1);
    const tried = sim.requests().filter((q) => q.endpoint === 'metrics_data' && q.rawQuery === `date=${failing}`);
    expect(tried.length).toBeGreaterThan(1);
    expect(tried.every((q) => q.status === 503)).toBe(true);
    expect(r.stdout).toContain(`stack f: counts (cmdb_assets, cmdb_users) of ${failing}: GET /CMDB/v2/system/metrics/data: 503`);

    const samples = openMetricsSamples(out);
    for (const name of ['cmdb_assets', 'cmdb_users']) {
      const key = [...samples.keys()].find((k) => k.startsWith(`${name}{`));
      const times = samples.get(key ?? '') ?? [];
      expect(times.filter((t) => t >= dayStart && t < dayStart + DAY)).toEqual([]);
      // The day before ends at its last step; the day after starts at its first.
      expect(times.filter((t) => t < dayStart).at(-1)).toBe(dayStart - 300);
      expect(times.find((t) => t >= dayStart)).toBe(dayStart + DAY);
    }
    // The rest of the history is there.
    expect([...samples.keys()].some((k) => k.startsWith('cmdb_connector_info{'))).toBe(true);
  });
});
