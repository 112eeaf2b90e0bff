/**
 * `--fill-gaps` after a real outage of the daemon, as docs/backfill.md documents it (`--from 7d`, no
 * `--to`), into what users run, each scraping the built exporter every 2 s: Prometheus 3.5.3 and
 * 2.42 (remote-write receivers with an out-of-order window), VictoriaMetrics 1.145 scraping it
 * itself (-promscrape.config, its default 30-s query latency), and a Prometheus 3.5.3 configured as
 * prometheus-operator configures one: job_name `serviceMonitor/monitoring/cmdb-exporter/0`, the job
 * label relabelled to `cmdb-exporter`, every 6 s (three times its global 2 s).
 *
 * The daemon is killed (SIGKILL) and started again once every scraper shows four failed scrapes:
 * each scraper wrote its staleness markers at the first. It starts as a daemon does, answering
 * scrapes before it has polled anything: its CMDB's token endpoint is held until every scraper has
 * recorded a scrape of it without the stack (up 1, no endpoint of the stack up), part of the
 * outage, where a VictoriaMetrics since 1.140 (1.122.19, 1.136.4 of its long-term releases) writes
 * staleness markers again, for every series the last good scrape had and this one has not. Once
 * each shows good scrapes again (a VictoriaMetrics' range queries show its last 30 s only then), on
 * each target:
 * - the documented command finds the outage (searched 7d up to now) from a millisecond after the
 *   first failed scrape to before the next good one, reading the scrape interval of the target
 *   itself (6 s for the operator's job, not the global 2 s), and no other gap than the time before
 *   the target's first scrape;
 * - once filled, a range query of cmdb_assets at the scrape interval over the outage has a value at
 *   every step, at each missed scrape's moment (just after a staleness marker written there) and
 *   between two.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { JOB, startPrometheus } from './harness/prometheus.js';
import { baseEnv, freePort, http, makeTempDir, removeDir, REPO_ROOT, requireBuild } from './harness/tools.js';
import { startVictoria } from './harness/victoria.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'outage';
const SCRAPE = 2;
const OPERATOR_SCRAPE = 3 * SCRAPE;
/** Failed scrapes every scraper shows before the daemon is started again: more than the two a gap tolerates. */
const FAILED_SCRAPES = 4;
const NAMES = ['Prometheus 3.5.3', 'Prometheus 2.42', 'VictoriaMetrics 1.145', 'Prometheus 3.5.3 as prometheus-operator'] as const;

interface Target {
  readonly name: string;
  readonly url: string;
  /** Its own scrape interval, seconds. */
  readonly interval: number;
}

let dir: string;
let sim: SimulatorServer;
let exporter: RunningExporter;
let config: string;
let instance: string;
const targets: Target[] = [];
let startedAt = 0;
let killedAt = 0;
let restartedAt = 0;

const now = () => Date.now() / 1000;

/** Raw samples of `selector` in the `range` seconds up to `at`, per series: [time, value]. */
async function raw(url: string, selector: string, at: number, range: number): Promise<Array<Array<[number, number]>>> {
  const r = await http(`${url}/api/v1/query?query=${encodeURIComponent(`${selector}[${Math.ceil(range)}s]`)}&time=${at}`);
  const body = JSON.parse(r.text) as { status: string; data?: { result: Array<{ values: Array<[number, string]> }> }; error?: string };
  if (body.status !== 'success' || !body.data) throw new Error(`${selector}: ${body.error ?? r.text}`);
  return body.data.result.map((s) => s.values.map(([t, v]) => [Number(t), Number(v)] as [number, number]));
}

/**
 * The scrapes of the exporter a target recorded in the `range` seconds up to `at`: each with `up`,
 * and whether it was good (up 1 and some cmdb_endpoint_up of the stack 1 at its time).
 */
async function scrapes(t: Target, at: number, range: number): Promise<Array<{ at: number; up: number; good: boolean }>> {
  const target = `job="${JOB}",instance="${instance}"`;
  const [ups, endpoints] = await Promise.all([raw(t.url, `up{${target}}`, at, range), raw(t.url, `cmdb_endpoint_up{${target},stack="${STACK}"}`, at, range)]);
  const polled = new Set(endpoints.flatMap((s) => s.filter(([, v]) => v === 1).map(([time]) => time)));
  return (ups[0] ?? []).map(([time, v]) => ({ at: time, up: v, good: v === 1 && polled.has(time) }));
}

/**
 * Points after `since`, at the target's interval, where its range queries show a good scrape in the
 * interval before: what the gap search sees. A VictoriaMetrics shows its last 30 s only then
 * (-search.latencyOffset), though its raw samples are there.
 */
async function coveredPoints(t: Target, since: number): Promise<number> {
  const target = `job="${JOB}",instance="${instance}"`;
  const w = `${t.interval}s`;
  const expr = `(max(last_over_time(cmdb_endpoint_up{${target},stack="${STACK}"}[${w}])) == 1) and on() (max(last_over_time(up{${target}}[${w}])) == 1)`;
  const r = await http(`${t.url}/api/v1/query_range?query=${encodeURIComponent(expr)}&start=${since}&end=${now()}&step=${t.interval}`);
  const body = JSON.parse(r.text) as { data?: { result: Array<{ values: unknown[] }> } };
  return body.data?.result[0]?.values.length ?? 0;
}

/**
 * Until every target shows `n` scrapes after `since` of a kind: good (as its range queries see
 * them), failed (up 0), or answered without the stack (up 1, no endpoint of the stack up).
 */
async function scrapesSeen(since: number, kind: 'good' | 'failed' | 'without the stack', n: number, what: string): Promise<void> {
  const counted = (s: { up: number; good: boolean }) => (kind === 'failed' ? s.up === 0 : s.up === 1 && !s.good);
  for (const t of targets) {
    await waitFor(
      `${t.name} to show ${n} ${what}`,
      async () => {
        const seen = kind === 'good' ? await coveredPoints(t, since) : (await scrapes(t, now(), 600)).filter((s) => s.at > since && counted(s)).length;
        return seen >= n ? done(undefined) : notYet(`${seen} of ${n}`);
      },
      // VictoriaMetrics' range queries show its last 30 s only then (-search.latencyOffset).
      { timeoutMs: 180_000, intervalMs: 500 },
    );
  }
}

function fillGaps(t: Target, out: string) {
  // The documented command: docs/backfill.md "Filling a gap after the exporter was down".
  const args = ['--from', '7d', '--fill-gaps', '--prometheus.url', t.url, '--remote-write.url', `${t.url}/api/v1/write`, '--out', join(dir, out)];
  return runToCompletion(process.execPath, ['dist/main.js', 'backfill', '--config', config, ...args], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 300_000 });
}

beforeAll(async () => {
  requireBuild();
  dir = makeTempDir('backfill-outage');
  sim = await startSimulator({ seed: 23, live: false, connectorPeriodSeconds: 86_400, historyDays: 8, size: { runsPerConnector: 8, connectors: 3, actions: 2, jobsPerAction: 6 } });
  // The default poll intervals: the backfill's steps over the 7 days before the first scrape are each group's, at most 5 minutes.
  const stack = { name: STACK, baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, backfillRequestsPerMinute: 6000 };
  config = writeExporterConfig(dir, { logLevel: 'info', stacks: [stack] });
  // A port of its own, kept across the restart: the scrapers' static target.
  instance = `127.0.0.1:${await freePort()}`;
  exporter = await startExporter({ args: ['--config', config], env: { EXPORTER_LISTEN_ADDRESS: instance } });
  await waitUntilReady(exporter);

  const scrape = `${SCRAPE}s`;
  const remoteWrite = { outOfOrderTimeWindow: '30d' };
  const folder = (name: string) => {
    mkdirSync(join(dir, name));
    return join(dir, name);
  };
  const p3 = await startPrometheus({ dir: folder('p3'), target: instance, ruleFiles: new Map(), interval: scrape, remoteWrite, tier: 'current' });
  const p2 = await startPrometheus({ dir: folder('p2'), target: instance, ruleFiles: new Map(), interval: scrape, remoteWrite, tier: 'previous' });
  const vm = await startVictoria(dir, { tier: 'current', scrape: { global: { scrape_interval: scrape }, scrape_configs: [{ job_name: JOB, static_configs: [{ targets: [instance] }] }] } });
  const operator = await startPrometheus({
    dir: folder('operator'),
    target: instance,
    ruleFiles: new Map(),
    interval: scrape,
    remoteWrite,
    tier: 'current',
    scrapeConfigs: [
      {
        job_name: 'serviceMonitor/monitoring/cmdb-exporter/0',
        scrape_interval: `${OPERATOR_SCRAPE}s`,
        scrape_timeout: `${OPERATOR_SCRAPE}s`,
        static_configs: [{ targets: [instance] }],
        // As the operator does: the job label is the Service's name, not the job_name.
        relabel_configs: [{ target_label: 'job', replacement: JOB }],
      },
    ],
  });
  targets.push(
    { name: NAMES[0], url: p3.api.url, interval: SCRAPE },
    { name: NAMES[1], url: p2.api.url, interval: SCRAPE },
    { name: NAMES[2], url: vm.url, interval: SCRAPE },
    { name: NAMES[3], url: operator.api.url, interval: OPERATOR_SCRAPE },
  );
  startedAt = now();
  await scrapesSeen(startedAt, 'good', 3, 'good scrapes');

  // The outage: a kill, as long as it takes every scraper to show four failed scrapes.
  exporter.proc.killNow();
  await exporter.proc.exited;
  killedAt = now();
  await scrapesSeen(killedAt, 'failed', FAILED_SCRAPES, 'failed scrapes');
  // Started again, it answers scrapes before its first poll (its token asked for, held), until
  // every scraper has recorded one such scrape: the outage's last scrapes.
  sim.addFault({ endpoint: 'access_token', hold: true });
  exporter = await startExporter({ args: ['--config', config], env: { EXPORTER_LISTEN_ADDRESS: instance } });
  restartedAt = now();
  await scrapesSeen(restartedAt, 'without the stack', 1, 'a scrape answered without the stack');
  sim.clearFaults();
  await scrapesSeen(restartedAt, 'good', 2, 'good scrapes after the restart');
}, 600_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

describe('--fill-gaps after a real outage of the daemon, as documented', () => {
  it.each(NAMES)('%s: finds the outage from just after the first failed scrape, fills it at the scrape interval, and every moment of it answers', async (name) => {
    const t = targets.find((x) => x.name === name) as Target;
    const r = await fillGaps(t, `fill-${NAMES.indexOf(name)}`);
    const output = `${t.name}: exit ${String(r.code)}\n${r.stdout}\n${r.stderr}`;
    expect(r.code, output).toBe(0);
    expect(r.stdout, output).toContain('searched 7d up to now');
    // The target's own interval: the operator's job is not looked up by the job label.
    expect(r.stdout, output).toContain(`scrape interval ${t.interval}s (`);
    // A remote-write run says nothing of blocks overlapping the head block.
    expect(r.stderr, output).not.toContain('head block');

    // The scrapes as the target recorded them: its first good one, and around the outage.
    const seen = await scrapes(t, now(), now() - startedAt + 60);
    const firstGood = Math.min(...seen.filter((x) => x.good).map((x) => x.at));
    const lastGood = Math.max(...seen.filter((x) => x.good && x.at < killedAt).map((x) => x.at));
    const firstFailed = Math.min(...seen.filter((x) => x.at > lastGood && !x.good).map((x) => x.at));
    const nextGood = Math.min(...seen.filter((x) => x.at > firstFailed && x.good).map((x) => x.at));
    expect([firstGood, lastGood, firstFailed, nextGood].every(Number.isFinite), `${output}\n${JSON.stringify(seen)}`).toBe(true);
    // The outage's last scrapes answered without the stack: the restarted daemon had not polled yet.
    expect(seen.some((x) => x.at > firstFailed && x.at < nextGood && x.up === 1), JSON.stringify(seen)).toBe(true);

    const gaps = [...r.stdout.matchAll(/^ {2}(\S+) to (\S+) \(/gm)].map((m) => [Date.parse(m[1] as string) / 1000, Date.parse(m[2] as string) / 1000] as const);
    // The time before the target's first scrape, and the outage: no other gap.
    const before = gaps.filter(([, b]) => b < firstGood);
    const outage = gaps.filter(([a]) => a > firstGood);
    expect([before.length, outage.length, gaps.length], output).toEqual([1, 1, 2]);
    const [from, to] = outage[0] as readonly [number, number];
    // A millisecond after the first failed scrape (its staleness markers), on Prometheus 3 and 2 alike.
    expect(Math.round((from - firstFailed) * 1000), output).toBe(1);
    expect(to, output).toBeLessThan(nextGood);
    expect(to, output).toBeGreaterThanOrEqual(nextGood - 2 * t.interval);

    // Filled: every moment of the outage answers, right after each missed scrape and between two.
    const end = nextGood - 0.001;
    for (const start of [firstFailed + 0.001, firstFailed + t.interval / 2]) {
      const steps = Math.floor((end - start) / t.interval) + 1;
      const times = await waitFor(
        `${t.name}: cmdb_assets at every step of the outage`,
        async () => {
          const q = await http(`${t.url}/api/v1/query_range?query=${encodeURIComponent(`cmdb_assets{stack="${STACK}"}`)}&start=${start}&end=${end}&step=${t.interval}`);
          const body = JSON.parse(q.text) as { data: { result: Array<{ values: Array<[number, string]> }> } };
          const values = (body.data.result[0]?.values ?? []).map((v) => Number(v[0]));
          return values.length >= steps ? done(values) : notYet(`${values.length} of ${steps} steps: ${JSON.stringify(values)}`);
        },
        // What was written becomes visible in VictoriaMetrics within a second or so.
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      // No step without a value: from the first to the last, one every scrape interval.
      const holes = times.slice(1).filter((x, k) => Math.abs(x - (times[k] as number) - t.interval) > 0.01);
      expect([t.name, start, holes], JSON.stringify(times)).toEqual([t.name, start, []]);
      expect(times[0] as number).toBeLessThanOrEqual(start + 0.01);
      expect(times.at(-1) as number).toBeGreaterThanOrEqual(end - t.interval);
    }
  });
});
