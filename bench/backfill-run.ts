/**
 * The backfill cell: `cmdb-exporter backfill` over 30 days of the medium size's history (the
 * simulator's connectors running once a day, 30 runs each; Action jobs and ingestion runs spread
 * over the 30 days), run as users run it, in a process of its own, by both routes side by side on
 * the same range: TSDB blocks through the real promtool, and remote write into a real
 * VictoriaMetrics (Debian `victoria-metrics`, started here on loopback).
 *
 * Reported per route: wall time of the whole command, samples a second, peak RSS, and the disk it
 * used (blocks: the OpenMetrics text written, never more than two windows of it at a time, and the
 * blocks; remote write: the state in --out, and what the target keeps). Beside them the requests per
 * endpoint (from the simulator's request log) and the time they take at the default pace
 * (backfillRequestsPerMinute, computed as the token bucket spends it: the cell itself reads at a
 * raised pace, since waiting 20 minutes measures nothing).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { secondsAtPace } from '../src/backfill/plan.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import { freePort } from '../scripts/demo-process.js';
import { part, pathWithParts } from '../scripts/parts/index.js';
import { startChild, stopProcess, until, type Child } from './children.js';
import { runMain } from './daemon.js';
import { bytes, count, seconds, type Table } from './format.js';
import { sizeByName } from './sizes.js';
import { CLOCK_MS, requestLog, type SimulatorReady } from './simulator-process.js';

export const BACKFILL_DAYS = 30;

export interface RouteFigures {
  readonly route: 'blocks' | 'remote write';
  readonly samples: number;
  readonly wallSeconds: number;
  /** Replaying and writing (blocks: the text; remote write: encoding and sending). */
  readonly generateSeconds: number;
  readonly peakRssBytes: number;
  /** Blocks: the OpenMetrics text written (two windows on disk at most); remote write: 0. */
  readonly textBytes: number;
  /** Blocks: the blocks; remote write: the target's storage after the backfill. */
  readonly storedBytes: number;
  /** What stays in --out besides the blocks: the state file. */
  readonly stateBytes: number;
  readonly promtoolSeconds?: number;
  readonly blocks?: number;
  readonly requests?: number;
  readonly requestBytes?: number;
}

function du(path: string): number {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((n, name) => n + du(join(path, name)), 0);
}

function figure(text: string, pattern: RegExp, what: string): RegExpExecArray {
  const m = pattern.exec(text);
  if (!m) throw new Error(`backfill output has no ${what}:\n${text}`);
  return m;
}

/** A VictoriaMetrics on loopback with its storage in `dir`; resolves once it answers /health. */
async function startVictoria(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const bin = part('victoria-metrics');
  const port = await freePort();
  const child = spawn(bin, [`-storageDataPath=${dir}`, `-httpListenAddr=127.0.0.1:${port}`, '-retentionPeriod=100y', '-loggerLevel=ERROR'], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  try {
    await until('victoria-metrics /health', performance.now() + 30_000, async () => ((await fetch(`${url}/health`).catch(() => undefined))?.ok ? true : 'not answering'));
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return { url, child };
}

async function blocksRoute(common: readonly string[], dir: string): Promise<RouteFigures> {
  const out = join(dir, 'blocks');
  // The pinned promtool of the real parts, which the command finds on its PATH.
  const r = await runMain([...common, '--out', out], { PATH: pathWithParts(['promtool']) });
  if (r.code !== 0) throw new Error(`backfill (blocks) exited ${String(r.code)}:\n${r.stdout}\n${r.stderr.slice(-4000)}`);
  const om = figure(r.stdout, /openmetrics: (\d+) samples, (\d+) bytes in \d+ file\(s\), ([\d.]+)s, peak RSS (\d+) MB; promtool: \d+ run\(s\) in ([\d.]+)s/, 'openmetrics and promtool line');
  const blocks = readdirSync(out).filter((n) => /^[0-9A-Z]{26}$/.test(n));
  const blockBytes = blocks.reduce((n, b) => n + du(join(out, b)), 0);
  return {
    route: 'blocks',
    samples: Number(om[1]),
    wallSeconds: r.seconds,
    generateSeconds: Number(om[3]),
    peakRssBytes: Number(om[4]) * 2 ** 20,
    textBytes: Number(om[2]),
    storedBytes: blockBytes,
    stateBytes: du(out) - blockBytes,
    promtoolSeconds: Number(om[5]),
    blocks: blocks.length,
  };
}

async function remoteWriteRoute(common: readonly string[], dir: string): Promise<RouteFigures> {
  const storage = join(dir, 'victoria');
  const vm = await startVictoria(storage);
  try {
    const out = join(dir, 'remote-write-state');
    const r = await runMain([...common, '--out', out, '--remote-write.url', `${vm.url}/api/v1/write`]);
    if (r.code !== 0) throw new Error(`backfill (remote write) exited ${String(r.code)}:\n${r.stdout}\n${r.stderr.slice(-4000)}`);
    const rw = figure(r.stdout, /remote write: (\d+) samples in (\d+) request\(s\) \((\d+) bytes, \d+ retried\), ([\d.]+)s replaying, peak RSS (\d+) MB/, 'remote write line');
    // What the target keeps once its in-memory parts are on disk.
    await fetch(`${vm.url}/internal/force_flush`).catch(() => undefined);
    return {
      route: 'remote write',
      samples: Number(rw[1]),
      wallSeconds: r.seconds,
      generateSeconds: Number(rw[4]),
      peakRssBytes: Number(rw[5]) * 2 ** 20,
      textBytes: 0,
      storedBytes: du(storage),
      stateBytes: du(out),
      requests: Number(rw[2]),
      requestBytes: Number(rw[3]),
    };
  } finally {
    await stopProcess(vm.child);
  }
}

/**
 * The simulator with `days` days of the medium size's history (its connectors running once a day),
 * a new temporary directory, and the arguments of `cmdb-exporter backfill` over those days at a
 * raised pace (its configuration written into that directory). Shared with bench/snappy-run.ts.
 */
export async function backfillSetup(days: number, step: string | undefined): Promise<{ sim: Child; ready: SimulatorReady; dir: string; args: string[] }> {
  const medium = sizeByName('medium');
  if (!medium) throw new Error('no medium size');
  const sim = await startChild('simulator-process.ts', [JSON.stringify({ ...medium.knobs, runsPerConnector: days, jobsPerAction: days }), JSON.stringify({ connectorPeriodSeconds: 86_400, historyDays: days })]);
  const ready = sim.ready as SimulatorReady;
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-bench-backfill-'));
  const config = join(dir, 'exporter.yaml');
  // Raised for the cell; the time at the default pace is computed from the requests.
  const stack = { name: 'bench', baseUrl: ready.url, clientId: ready.clientId, secret: ready.secret, rateLimitPerMinute: 6000, backfillRequestsPerMinute: 6000, track: { assets: ready.trackedAssets, users: ready.trackedUsers } };
  writeFileSync(config, stringify({ stacks: [stack] }));
  // The range ends 3 h before the simulator process's fixed clock.
  const to = CLOCK_MS / 1000 - 3 * 3600;
  const iso = (s: number) => new Date(s * 1000).toISOString();
  return { sim, ready, dir, args: ['backfill', '--config', config, '--from', iso(to - days * 86_400), '--to', iso(to), '--instance', 'bench:9873', ...(step ? ['--step', step] : [])] };
}

export async function benchBackfill(opts: { days?: number; step?: string }, progress: (m: string) => void) {
  const days = opts.days ?? BACKFILL_DAYS;
  progress(`backfill: simulator with ${days} days of medium history`);
  const { sim, ready, dir, args: common } = await backfillSetup(days, opts.step);
  try {
    await requestLog(ready.url, 'clear');
    progress(`backfill: ${days} days, ${ready.connectorProfiles} connector profiles, ${ready.actions} Actions${opts.step ? `, --step ${opts.step}` : ''}: blocks`);
    const blocks = await blocksRoute(common, dir);
    const requestsByEndpoint: Record<string, number> = {};
    for (const r of await requestLog(ready.url)) requestsByEndpoint[r.endpoint ?? 'other'] = (requestsByEndpoint[r.endpoint ?? 'other'] ?? 0) + 1;
    rmSync(join(dir, 'blocks'), { recursive: true, force: true });
    progress('backfill: remote write into VictoriaMetrics');
    const remote = await remoteWriteRoute(common, dir);
    const requests = Object.values(requestsByEndpoint).reduce((a, b) => a + b, 0);
    const rate = BUILTIN_SETTINGS.backfillRequestsPerMinute;
    return {
      size: 'medium',
      days,
      connectorProfiles: ready.connectorProfiles,
      connectorRuns: ready.connectorRuns,
      actions: ready.actions,
      trackedNames: ready.trackedAssets.length + ready.trackedUsers.length,
      requests,
      requestsByEndpoint,
      defaultRate: rate,
      secondsAtDefaultPace: secondsAtPace(requests, rate),
      routes: [blocks, remote],
      ...(opts.step ? { step: opts.step } : {}),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await sim.stop();
  }
}

export function backfillTable(f: Awaited<ReturnType<typeof benchBackfill>>): Table {
  const byEndpoint = Object.entries(f.requestsByEndpoint)
    .sort((a, b) => b[1] - a[1])
    .map(([e, n]) => `${e} ${count(n)}`)
    .join(', ');
  const [blocks, remote] = [f.routes.find((r) => r.route === 'blocks'), f.routes.find((r) => r.route === 'remote write')];
  const both = (what: (r: RouteFigures) => string): [string, string] => [blocks ? what(blocks) : '-', remote ? what(remote) : '-'];
  return {
    title: `Backfill of ${f.days} days, ${f.size} size (${count(f.connectorProfiles)} connector profiles with a run a day, ${count(f.actions)} Actions, ${count(f.trackedNames)} tracked names), ${f.step ? `--step ${f.step}` : 'default steps'}; requests ${count(f.requests)} (${byEndpoint}), ${seconds(f.secondsAtDefaultPace)} at the default pace (${f.defaultRate} a minute)`,
    head: ['what', 'blocks (promtool)', 'remote write (VictoriaMetrics)'],
    numericFrom: 1,
    rows: [
      ['samples', ...both((r) => count(r.samples))],
      ['whole command, wall time', ...both((r) => seconds(r.wallSeconds))],
      ['samples a second (wall time)', ...both((r) => count(Math.round(r.samples / r.wallSeconds)))],
      ['replaying and writing', ...both((r) => seconds(r.generateSeconds))],
      ['promtool', ...both((r) => (r.promtoolSeconds === undefined ? '-' : seconds(r.promtoolSeconds)))],
      ['peak RSS of the backfill process', ...both((r) => bytes(r.peakRssBytes))],
      ['text written (at most two 6 h windows on disk)', ...both((r) => (r.textBytes ? bytes(r.textBytes) : 'none'))],
      ['requests to the target', ...both((r) => (r.requests === undefined ? '-' : `${count(r.requests)}, ${bytes(r.requestBytes ?? 0)}`))],
      ['kept: blocks / the target\'s storage', ...both((r) => `${bytes(r.storedBytes)}${r.blocks === undefined ? '' : ` in ${r.blocks} blocks`}`)],
      ['state in --out', ...both((r) => bytes(r.stateBytes))],
    ],
  };
}
