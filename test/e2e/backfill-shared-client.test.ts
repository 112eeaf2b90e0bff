/**
 * The daemon and a backfill with one client id, against a CMDB that keeps one token per client
 * (the simulator's one-token-per-client mode): each token request ends the other process's token,
 * so each keeps getting 401 on a token the token endpoint has just granted. That is a token taken
 * by the other client, not rejected credentials: the built backfill completes (exit 0, every
 * family it writes present) without a word of rejected credentials, and the built daemon, polling
 * all along, does not call its credentials rejected either. Before, the backfill stopped after two
 * rounds with "credentials rejected … Check the credentials of stack …", exit 1.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKFILLED_FAMILIES } from '../../src/backfill/replay.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from './harness/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { http, makeTempDir, removeDir, REPO_ROOT, requireBuild } from './harness/tools.js';

const DAY = 86_400;
const STACK = 'shared';
let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let config: string;

beforeAll(async () => {
  requireBuild();
  dir = makeTempDir('backfill-shared-client');
  sim = await startSimulator({ seed: 5, live: false, oneTokenPerClient: true, connectorPeriodSeconds: DAY, historyDays: 3, size: { runsPerConnector: 4, actions: 4, jobsPerAction: 20 } });
  const state = sim.state();
  config = writeExporterConfig(dir, {
    logLevel: 'info',
    stacks: [
      {
        name: STACK,
        baseUrl: sim.url,
        clientId: sim.clientId,
        secret: sim.secret,
        rateLimitPerMinute: 6000,
        actionJobsPerMinute: 6000,
        // Slow enough that the daemon's polls (every 10 s) fall inside the backfill's reading many times.
        backfillRequestsPerMinute: 40,
        intervals: FAST_INTERVALS,
        track: { assets: state.trackedAssets, users: state.trackedUsers },
      },
    ],
  });
  exporter = await startExporter({ args: ['--config', config], env: {} });
  await waitUntilReady(exporter);
}, 180_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

/** Families (names) with a sample in the OpenMetrics files of `out`. */
function familiesIn(out: string): Set<string> {
  const names = new Set<string>();
  for (const f of readdirSync(out).filter((n) => n.endsWith('.om'))) {
    for (const m of readFileSync(join(out, f), 'utf8').matchAll(/^(cmdb_\w+)[{ ]/gm)) names.add(m[1] as string);
  }
  return names;
}

describe('daemon and backfill with one client id, one token per client', () => {
  it('the backfill completes with every family and says nothing of rejected credentials; the daemon does not call its credentials rejected', async () => {
    const before = sim.requests().length;
    const out = join(dir as string, 'out');
    // No promtool on PATH: the OpenMetrics files stay in --out to be read.
    const r = await runToCompletion(process.execPath, ['dist/main.js', 'backfill', '--config', config, '--from', '3d', '--step', '1h', '--out', out, '--instance', 'x:1'], {
      cwd: REPO_ROOT,
      env: { PATH: '' },
      timeoutMs: 170_000,
    });
    const said = `exit ${String(r.code)}\n${r.stdout}\n${r.stderr}`;
    const during = sim.requests().slice(before);
    // The two processes did take each other's tokens all along.
    const tokens = during.filter((q) => q.endpoint === 'access_token' && q.status === 200).length;
    const taken = during.filter((q) => q.status === 401).length;
    expect(tokens, said).toBeGreaterThan(4);
    expect(taken, said).toBeGreaterThan(2);

    expect(r.code, said).toBe(0);
    expect(said).not.toMatch(/credentials|rejected/i);
    expect(r.stdout, said).not.toContain('missing');
    const written = familiesIn(out);
    expect(BACKFILLED_FAMILIES.map((f) => f.name).filter((n) => !written.has(n))).toEqual([]);

    // The daemon kept polling and never took the 401s for rejected credentials.
    const logged = exporter.proc.output();
    expect(logged).not.toMatch(/rejected the credentials|credentials rejected|token rejected/i);
    const page = await http(`${exporter.url}/`);
    expect(page.text).not.toContain('credentials rejected');
  });
});
