/**
 * What a backfill asks of the Prometheus it fills (--prometheus.url), in-process against the
 * simulator and a stand-in Prometheus API (its version and retention):
 * - blocks older than its retention are refused (exit 2) with what to do; with --fill-gaps the
 *   search starts at the retention instead, and says why it searched less than was asked;
 * - the warning of a block overlapping the head block is said where it applies: blocks into a
 *   Prometheus before 2.39 (or one not known), never into 3.5.3 or by remote write;
 * - --storage.path must be the daemon's folder, and never --out.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { runCommand as run } from '../helpers/backfill.js';

let sim: SimulatorServer;
let dir: string;
let config: string;
const servers: Server[] = [];

/** A stand-in Prometheus: this version, this retention, no targets, no samples; it takes remote write. */
async function prometheus(version: string, retention: string): Promise<string> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const json = (data: unknown) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status: 'success', data }));
    req.resume();
    if (path === '/api/v1/write') res.writeHead(204).end();
    else if (path === '/api/v1/status/flags') json({ 'storage.tsdb.retention.time': retention });
    else if (path === '/api/v1/status/buildinfo') json({ version });
    else if (path === '/api/v1/status/config') json({ yaml: 'storage: { tsdb: { out_of_order_time_window: 30d } }' });
    else if (path === '/api/v1/targets') json({ activeTargets: [] });
    else if (path === '/api/v1/query' || path === '/api/v1/query_range') json({ resultType: 'matrix', result: [] });
    else res.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

beforeAll(async () => {
  sim = await startSimulator({ live: false, connectorPeriodSeconds: 86_400, historyDays: 3, size: { runsPerConnector: 3, connectors: 2, actions: 1, jobsPerAction: 3 } });
  dir = mkdtempSync(join(tmpdir(), 'cmdb-backfill-target-'));
  config = join(dir, 'exporter.yaml');
  writeFileSync(config, stringify({ stacks: [{ name: 'one', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, backfillRequestsPerMinute: 6000, rateLimitPerMinute: 6000 }] }));
});

afterAll(async () => {
  for (const s of servers) s.close();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('blocks into a Prometheus', () => {
  it('a --from older than its retention is refused, saying what to do', async () => {
    const url = await prometheus('3.5.3', '7d');
    const r = await run(['--config', config, '--from', '10d', '--prometheus.url', url, '--instance', 'x:1', '--out', join(dir, 'old')]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`is older than ${url} keeps (Prometheus 3.5.3, --storage.tsdb.retention.time 7d): it deletes blocks older than that at once. Raise its retention, or give --from 7d or later`);
  });

  it('--fill-gaps searches from its retention on, and says why it searched less than asked', async () => {
    const url = await prometheus('3.5.3', '7d');
    const r = await run(['--config', config, '--from', '10d', '--fill-gaps', '--prometheus.url', url, '--instance', 'x:1', '--out', join(dir, 'gaps')]);
    expect(r.stdout).toContain(
      `searched 7d up to 3h ago (not the 3d before that: ${url} keeps 7d (--storage.tsdb.retention.time) and deletes older blocks at once; not the last 3h: blocks stay out of the time Prometheus still holds in its head block (fill by remote write, --remote-write.url, to search up to now))`,
    );
  });

  it.each([
    ['2.38.0', true],
    ['2.42.0', false],
    ['3.5.3', false],
  ])('a --to within 3h of now into Prometheus %s: the head-block warning %s', async (version, warned) => {
    const url = await prometheus(version, '15d');
    const r = await run(['--config', config, '--from', '1d', '--to', 'now', '--prometheus.url', url, '--instance', 'x:1', '--out', join(dir, `head-${version}`)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.includes(`Prometheus ${version} (before 2.39) ignores a block overlapping it`)).toBe(warned);
    if (!warned) expect(r.stderr).not.toContain('head block');
  });

  it('by remote write, no warning of blocks at all', async () => {
    const url = await prometheus('2.38.0', '15d');
    const r = await run(['--config', config, '--from', '1d', '--to', 'now', '--prometheus.url', url, '--remote-write.url', `${url}/api/v1/write`, '--instance', 'x:1', '--out', join(dir, 'rw')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('head block');
  });
});

describe("--storage.path, the daemon's folder", () => {
  it('must be a folder, and not --out', async () => {
    const missing = await run(['--config', config, '--from', '1d', '--storage.path', join(dir, 'nowhere'), '--out', join(dir, 'sp')]);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining(`--storage.path: ${join(dir, 'nowhere')} is not a folder: give the --storage.path of the daemon`)]);
    const same = await run(['--config', config, '--from', '1d', '--storage.path', dir, '--out', dir]);
    expect([same.code, same.stderr]).toEqual([2, expect.stringContaining("--storage.path: is --out too: the daemon's folder is read only")]);
  });

  it('without it the backfill says a daemon with the same client id loses its token, and how to avoid it; with a folder no daemon holds, that it asks for its own', async () => {
    const without = await run(['--config', config, '--from', '1d', '--instance', 'x:1', '--out', join(dir, 'note')]);
    expect(without.stdout).toContain("token of stack one: a daemon polling with the same client id loses its token each time this backfill asks for one, where the CMDB keeps one token per client (and takes this backfill's in turn): give this backfill the daemon's --storage.path");
    const idle = mkdtempSync(join(dir, 'idle-'));
    const given = await run(['--config', config, '--from', '1d', '--instance', 'x:1', '--storage.path', idle, '--out', join(dir, 'note-idle')]);
    expect(given.code, given.stderr).toBe(0);
    expect(given.stdout).toContain(`token of stack one: no daemon holds ${idle} now, so this backfill asks for its own; once a daemon runs there, it uses the daemon's`);
  });
});
