/**
 * `--fill-gaps` after a crash, as an operator meets it: a real Prometheus (remote-write receiver, a
 * 1-day out-of-order window) scrapes the built daemon every 5 s; the daemon is killed (SIGKILL) and
 * started again on the same address once Prometheus has recorded six failed scrapes (the issue
 * measured 80 s, sixteen failed scrapes; six prove the same: a hole far shorter than the largest
 * default step of 5 minutes, which a look-back of that step used to hide). Then the built backfill
 * with `--from 10m --to now --fill-gaps` at the default steps lists that hole (from just after the
 * last good scrape before the kill to the first scrape with data after the restart, as Prometheus
 * recorded them), fills it (cmdb_assets samples inside it afterwards), and a second run on a new
 * --out lists no gap there. Every wait is for an event Prometheus records.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { startPrometheus, type PrometheusApi } from './harness/prometheus.js';
import { baseEnv, freePort, http, makeTempDir, removeDir, REPO_ROOT, requireBuild } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'crash';
const FAILED_SCRAPES = 6;

let dir: string | undefined;
let sim: SimulatorServer;
let api: PrometheusApi;
let config: string;
let instance: string;
let env: Record<string, string>;

/** The raw samples of `selector` over the last `range` seconds: [unix seconds, value]. */
async function raw(selector: string, range: number): Promise<Array<[number, number]>> {
  const r = await http(`${api.url}/api/v1/query?query=${encodeURIComponent(`${selector}[${range}s]`)}`);
  const body = JSON.parse(r.text) as { data: { result: Array<{ values: Array<[number, string]> }> } };
  return (body.data.result[0]?.values ?? []).map((v) => [v[0], Number(v[1])]);
}

/** Until Prometheus holds `n` scrapes of the target with up == `value` after `after` (unix seconds); their times. */
function scrapes(value: 0 | 1, n: number, after: number, what: string): Promise<number[]> {
  return waitFor(
    what,
    async () => {
      const times = (await raw(`up{instance="${instance}"}`, 900)).filter(([t, v]) => t > after && v === value).map(([t]) => t);
      return times.length >= n ? done(times) : notYet(`${times.length} of ${n}`);
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
}

function backfill(out: string) {
  const args = ['--from', '10m', '--to', 'now', '--fill-gaps', '--prometheus.url', api.url, '--remote-write.url', `${api.url}/api/v1/write`, '--out', join(dir as string, out)];
  return runToCompletion(process.execPath, ['dist/main.js', 'backfill', '--config', config, ...args], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 170_000 });
}

const gapsOf = (stdout: string) => [...stdout.matchAll(/^ {2}(\S+) to (\S+) \(/gm)].map((m) => [Date.parse(m[1] as string) / 1000, Date.parse(m[2] as string) / 1000] as const);

async function startDaemon(): Promise<RunningExporter> {
  const exporter = await startExporter({ args: ['--config', config], env });
  await waitUntilReady(exporter);
  return exporter;
}

beforeAll(async () => {
  requireBuild();
  dir = makeTempDir('backfill-crash');
  sim = await startSimulator({ seed: 3, live: false, size: { connectors: 4, actions: 3, jobsPerAction: 4 } });
  // A port of its own that the restarted daemon takes again: Prometheus scrapes one address.
  instance = `127.0.0.1:${await freePort()}`;
  env = { EXPORTER_LISTEN_ADDRESS: instance };
  config = writeExporterConfig(dir, {
    logLevel: 'info',
    stacks: [
      {
        name: STACK,
        baseUrl: sim.url,
        clientId: sim.clientId,
        secret: sim.secret,
        rateLimitPerMinute: 6000,
        backfillRequestsPerMinute: 6000,
        intervals: { inventory: '30s', connectors: '30s' },
      },
    ],
  });
}, 60_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

describe('--fill-gaps after the daemon was killed', () => {
  it('lists the hole from the kill to the restart at the default steps, fills it, and a second run finds it no more', async () => {
    const first = await startDaemon();
    const prometheus = await startPrometheus({ dir: dir as string, target: instance, ruleFiles: new Map(), interval: '5s', remoteWrite: { outOfOrderTimeWindow: '1d' } });
    api = prometheus.api;
    const firstScrape = Math.min(...(await scrapes(1, 6, 0, 'six good scrapes of the daemon')));

    first.proc.signal('SIGKILL');
    await first.proc.exited;
    const killedAt = Date.now() / 1000;
    await scrapes(0, FAILED_SCRAPES, killedAt, `${FAILED_SCRAPES} failed scrapes after the kill`);
    const restartedAt = Date.now() / 1000;
    await startDaemon();
    const good = await scrapes(1, 3, restartedAt, 'three good scrapes after the restart');
    await waitFor(
      'cmdb_assets scraped after the restart',
      async () => ((await raw(`cmdb_assets{instance="${instance}"}`, 60)).some(([t]) => t > restartedAt) ? done(undefined) : notYet('not yet')),
      { timeoutMs: 60_000, intervalMs: 1000 },
    );

    // What Prometheus scraped, read before the fill writes samples of its own.
    const ups = await raw(`up{instance="${instance}"}`, 900);
    const lastBefore = Math.max(...ups.filter(([t, v]) => v === 1 && t < killedAt).map(([t]) => t));
    const failed = ups.filter(([, v]) => v === 0).map(([t]) => t);
    const assets = await raw(`cmdb_assets{instance="${instance}",stack="${STACK}"}`, 900);
    const dataAgain = Math.min(...assets.filter(([t]) => t > Math.max(...failed)).map(([t]) => t));

    const r = await backfill('fill');
    const said = `exit ${String(r.code)}\n${r.stdout}\n${r.stderr}`;
    expect(r.code, said).toBe(0);
    const gaps = gapsOf(r.stdout);
    // The time before the daemon's first scrape is a gap too (--from 10m reaches back before it).
    const hole = gaps.filter(([from]) => from > firstScrape);
    expect(hole, said).toHaveLength(1);
    const [from, to] = hole[0] as readonly [number, number];
    // Where the hole is, read from what Prometheus recorded (not from this test's clock): it starts
    // after the last good scrape before the kill, by the first failed one (a millisecond after it,
    // within one scrape interval of 5 s), and ends after the last failed scrape, by the first
    // scrape after the restart that has the stack's data (the daemon answers before its first poll).
    const recorded = `${said}\nlast good ${lastBefore}, failed ${failed.join(', ')}, data again ${dataAgain}`;
    expect(from, recorded).toBeGreaterThan(lastBefore);
    expect(from, recorded).toBeLessThanOrEqual(Math.min(...failed) + 5);
    expect(to, recorded).toBeGreaterThanOrEqual(Math.max(...failed));
    expect(to, recorded).toBeLessThanOrEqual(dataAgain);
    expect(gaps.filter((g) => g !== hole[0]).every(([, end]) => end < firstScrape), said).toBe(true);

    // Filled: cmdb_assets samples between the last good scrape before the kill and the first after the restart.
    const firstAfter = Math.min(...(good as number[]));
    const inside = (await raw(`cmdb_assets{instance="${instance}",stack="${STACK}"}`, 900)).filter(([t]) => t > lastBefore && t < firstAfter);
    expect(inside.length, `${said}\nhole ${lastBefore}..${firstAfter}`).toBeGreaterThan(0);

    const again = await backfill('again');
    const saidAgain = `exit ${String(again.code)}\n${again.stdout}\n${again.stderr}`;
    expect(again.code, saidAgain).toBe(0);
    expect(gapsOf(again.stdout).filter(([a, b]) => b >= lastBefore && a <= firstAfter), saidAgain).toEqual([]);
  });
});
