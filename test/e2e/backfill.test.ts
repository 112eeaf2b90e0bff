/**
 * End to end for `cmdb-exporter backfill`: the simulator (in-process) with 14 days of history, the
 * BUILT command reading it four times: through the real promtool into blocks that a real
 * Prometheus is started on, and over remote write into a running Prometheus (remote-write receiver,
 * out-of-order window) and a running VictoriaMetrics of each tier (1.145 and 1.79). Asks each about
 * past times (the counts of a day, a connector's health and last run after one of its runs, an
 * Action's last job) and expects
 * the same answers from all four; runs the shipped dashboards' queries inside the range, and
 * compares the backfilled families and label sets with a live scrape of the built exporter.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKey, runTime } from '../../src/api/connector-runs.js';
import type { ConnectorRun } from '../../src/api/schemas.js';
import { healthOf } from '../../src/collectors/connector-run.js';
import { COVERAGE_METRIC, WRITTEN_FAMILIES } from '../../src/backfill/coverage.js';
import { BACKFILLED_FAMILIES } from '../../src/backfill/replay.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';
import { startOfDay } from '../../src/simulator/format.js';
import { initialInventory, pastMetrics } from '../../src/simulator/data/inventory.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { analyse, GRAFANA_VALUES } from '../dashboards/promql.js';
import { startExporter, waitUntilReady, writeExporterConfig } from '../helpers/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { JOB, startPrometheus, type PrometheusApi, type Series } from './harness/prometheus.js';
import { allDashboardQueries } from './harness/queries.js';
import { baseEnv, http, makeTempDir, removeDir, REPO_ROOT, requireBuild, requirePart } from './harness/tools.js';
import { startVictoria } from './harness/victoria.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'backfill-sim';
const INSTANCE = 'cmdb-exporter:9873';
const DAY = 86_400;
const SEED = 42;

let dir: string | undefined;
let sim: SimulatorServer;
let api: PrometheusApi;
let configFile: string;
let backfillOutput = '';
let blockMetas: Array<{ minTime: number; maxTime: number }> = [];
/** The query APIs of the remote-write targets: a Prometheus and a VictoriaMetrics. */
const written: Array<{ name: string; url: string; output: string }> = [];
const nowS = Math.floor(Date.now() / 1000);

/** An instant query at `time` (unix seconds), of the Prometheus on the blocks or of `url`. */
async function queryAt(expr: string, time: number, url = api.url): Promise<Series[]> {
  const r = await http(`${url}/api/v1/query?query=${encodeURIComponent(expr)}&time=${time}`);
  const body = JSON.parse(r.text) as { status: string; data: { resultType: string; result: unknown }; error?: string };
  if (body.status !== 'success') throw new Error(`${expr} at ${time}: ${body.error ?? r.text}`);
  if (body.data.resultType === 'scalar') return [{ metric: {}, value: body.data.result as [number, string] }];
  return body.data.result as Series[];
}

/** What a result says, whoever answered: each series' labels but the name, and its value. */
const answer = (series: Series[]) => series.map((s) => ({ labels: { ...s.metric, __name__: undefined }, value: s.value[1] })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

/** The blocks' answer, after checking that the remote-write targets answer the same. */
async function sameEverywhere(expr: string, time: number): Promise<Series[]> {
  const blocks = await queryAt(expr, time);
  for (const target of written) expect([target.name, expr, answer(await queryAt(expr, time, target.url))]).toEqual([target.name, expr, answer(blocks)]);
  return blocks;
}

// One range for the four runs (a relative --from would move between them).
const backfillArgs = ['dist/main.js', 'backfill', '--from', String(nowS - 14 * DAY), '--to', String(nowS - 3 * 3600), '--instance', INSTANCE];

/**
 * Samples of the families a backfill writes (its coverage mark included) a target holds, counted
 * from the raw series of the last 15 days. Not `count_over_time`: that drops the name, and a
 * Prometheus that holds one label set twice (two series equal once empty labels are dropped) then
 * refuses the query for as long as it holds them, which hid what it held behind "same labelset".
 * Such series are reported instead (on stdout), and their samples counted: a sample written twice
 * makes the total wrong, which the wait names.
 */
async function samplesHeld(url: string): Promise<number> {
  let n = 0;
  for (const f of WRITTEN_FAMILIES) {
    const r = await http(`${url}/api/v1/query?query=${encodeURIComponent(`${f.name}[15d]`)}&time=${nowS}`);
    const body = JSON.parse(r.text) as { status: string; data?: { result: Array<{ metric: Record<string, string>; values?: unknown[] }> }; error?: string };
    if (body.status !== 'success' || !body.data) throw new Error(`${f.name}[15d] at ${nowS}: ${body.error ?? r.text}`);
    const seen = new Map<string, number>();
    for (const s of body.data.result) {
      n += s.values?.length ?? 0;
      const key = JSON.stringify(Object.entries(s.metric).filter(([, v]) => v !== '').sort());
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    for (const [key, times] of seen) if (times > 1) console.log(`${url} holds ${times} series with the labels ${key}`);
  }
  return n;
}

beforeAll(async () => {
  requireBuild();
  requirePart('prometheus');
  const promtool = requirePart('promtool');
  dir = makeTempDir('backfill');
  // Connectors run once a day with 15 runs each; Action jobs and ingestion runs spread over 14 days.
  sim = await startSimulator({
    seed: SEED,
    live: false,
    connectorPeriodSeconds: DAY,
    historyDays: 14,
    size: { runsPerConnector: 15, jobsPerAction: 40, ingestionRuns: 60 },
  });
  const state = sim.state();
  configFile = writeExporterConfig(dir, {
    // info: the harness reads the exporter's "listening on" line (the backfill logs at warn anyway).
    logLevel: 'info',
    stacks: [
      {
        name: STACK,
        baseUrl: sim.url,
        clientId: sim.clientId,
        secret: sim.secret,
        rateLimitPerMinute: 6000,
        actionJobsPerMinute: 6000,
        backfillRequestsPerMinute: 6000,
        track: { assets: state.trackedAssets, users: state.trackedUsers },
      },
    ],
  });
  // The blocks go where the Prometheus below keeps its TSDB.
  const run = await runToCompletion(process.execPath, [...backfillArgs, '--config', configFile, '--out', join(dir, 'data'), '--promtool', promtool], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 170_000 });
  backfillOutput = `${run.stdout}\n${run.stderr}`;
  if (run.code !== 0) throw new Error(`backfill exited ${String(run.code)}:\n${backfillOutput}`);
  // As written, before Prometheus compacts them into longer ones.
  blockMetas = readdirSync(join(dir, 'data'))
    .filter((n) => /^[0-9A-Z]{26}$/.test(n))
    .map((n) => JSON.parse(readFileSync(join(dir as string, 'data', n, 'meta.json'), 'utf8')) as { minTime: number; maxTime: number });
  // Scrapes nothing that answers: every series it holds comes from the backfill.
  const prometheus = await startPrometheus({ dir, target: '127.0.0.1:9', ruleFiles: new Map() });
  api = prometheus.api;

  // The same backfill over remote write, into a running Prometheus and a running VictoriaMetrics.
  const receiverDir = join(dir, 'receiver');
  mkdirSync(receiverDir);
  const receiver = await startPrometheus({ dir: receiverDir, target: '127.0.0.1:9', ruleFiles: new Map(), noScrape: true, remoteWrite: { outOfOrderTimeWindow: '30d' } });
  // VictoriaMetrics of both tiers: 1.145 answers Prometheus' buildinfo as "2.24.0", 1.79 does not.
  const victoria = await startVictoria(dir, { tier: 'current' });
  const victoriaBefore = await startVictoria(dir, { tier: 'previous' });
  for (const [name, url] of [
    ['Prometheus (remote write)', receiver.api.url],
    ['VictoriaMetrics 1.145', victoria.url],
    ['VictoriaMetrics 1.79', victoriaBefore.url],
  ] as const) {
    const out = join(dir, `state-${written.length}`);
    const r = await runToCompletion(process.execPath, [...backfillArgs, '--config', configFile, '--out', out, '--remote-write.url', `${url}/api/v1/write`], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 170_000 });
    const output = `${r.stdout}\n${r.stderr}`;
    if (r.code !== 0) throw new Error(`backfill into ${name} exited ${String(r.code)}:\n${output}`);
    written.push({ name, url, output });
  }
  // What was sent is searchable (VictoriaMetrics makes new data visible within a second or so).
  const total = Number(/all runs: (\d+) samples/.exec(written[0]?.output ?? '')?.[1]);
  for (const target of written) {
    await waitFor(
      `${target.name} to hold every sample`,
      async () => {
        const got = await samplesHeld(target.url);
        return got === total ? done(undefined) : notYet(`${got} of ${total}`);
      },
      // Generous: on a loaded two-core machine a freshly written VictoriaMetrics takes a while to merge and answer.
      { timeoutMs: 180_000, intervalMs: 2000 },
    );
  }
}, 600_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

describe('cmdb-exporter backfill into a real Prometheus', () => {
  it('reads the history and runs promtool into the data directory', () => {
    expect(backfillOutput).toMatch(/requests: \d+ in /);
    expect(backfillOutput).toMatch(/promtool: \d+ run\(s\)/);
  });

  it('blocks of 6 h aligned to UTC days: none crosses midnight or exceeds a day', () => {
    const metas = blockMetas;
    expect(metas.length).toBeGreaterThan(14 * 3);
    for (const m of metas) {
      expect(m.maxTime - m.minTime).toBeLessThanOrEqual(6 * 3600 * 1000);
      expect(Math.floor(m.minTime / 86_400_000)).toBe(Math.floor((m.maxTime - 1) / 86_400_000));
    }
    // One block per window: none written twice.
    expect(new Set(metas.map((m) => m.minTime)).size).toBe(metas.length);
  });

  it('remote write checked each target first, then sent every sample over the protocol', () => {
    expect(written[0]?.output).toMatch(/target: Prometheus \d+\.\d+\S*: takes samples up to 15d old \(retention 15d\)/);
    // Each VictoriaMetrics known as one, whatever Prometheus version it says it is.
    expect(written[1]?.output).toContain('target: VictoriaMetrics: keeps');
    expect(written[2]?.output).toContain('target: VictoriaMetrics: keeps');
    const blocksSamples = Number(/openmetrics: (\d+) samples/.exec(backfillOutput)?.[1]);
    for (const t of written) expect(Number(/remote write: (\d+) samples/.exec(t.output)?.[1])).toBe(blocksSamples);
  });

  it('answers cmdb_assets 10 days ago with the simulator\'s count for that day', async () => {
    const t = nowS - 10 * DAY;
    const day = startOfDay(t * 1000);
    const expected = pastMetrics(SEED, initialInventory(SEED), day, startOfDay(sim.dataset.startMs));
    const got = await sameEverywhere(`cmdb_assets{stack="${STACK}"}`, t);
    expect(got.map((s) => s.metric)).toEqual([{ __name__: 'cmdb_assets', job: JOB, instance: INSTANCE, stack: STACK }]);
    expect(Number(got[0]?.value[1])).toBe(expected.assetCount);
    const users = await sameEverywhere(`cmdb_users{stack="${STACK}"}`, t);
    expect(Number(users[0]?.value[1])).toBe(expected.userCount);
    // Another day answers that day's count, not the same one: the first day 2 to 9 days back whose
    // count the simulator made different (its days move up and down, so no direction is assumed).
    const other = [2, 3, 4, 5, 6, 7, 8, 9]
      .map((back) => ({ t: nowS - back * DAY, count: pastMetrics(SEED, initialInventory(SEED), startOfDay((nowS - back * DAY) * 1000), startOfDay(sim.dataset.startMs)).assetCount }))
      .find((d) => d.count !== expected.assetCount);
    expect(other, 'a day 2 to 9 days back whose count differs from 10 days back').toBeDefined();
    const later = await queryAt(`cmdb_assets{stack="${STACK}"}`, other?.t ?? nowS);
    expect(Number(later[0]?.value[1])).toBe(other?.count);
  });

  it("answers a connector's cmdb_connector_health at a past time with the status of its run then", async () => {
    const rows = sim.dataset.history.all() as unknown as ConnectorRun[];
    const byKey = new Map<string, ConnectorRun[]>();
    for (const r of rows) byKey.set(runKey(r), [...(byKey.get(runKey(r)) ?? []), r]);
    // A run 3 to 9 days back that did not succeed (the plainest proof that the past is not today),
    // asked an hour after it, before the next run of its key.
    const candidates = [...byKey.values()].flatMap((list) => {
      const sorted = [...list].sort((a, b) => (runTime(a, 'UTC') ?? 0) - (runTime(b, 'UTC') ?? 0));
      return sorted.flatMap((run, i) => {
        const t = (runTime(run, 'UTC') ?? 0) + 3600;
        const next = sorted[i + 1];
        const fits = t > nowS - 9 * DAY && t < nowS - 3 * DAY && (!next || (runTime(next, 'UTC') ?? 0) > t + 600);
        return fits && run.platform !== 'ML-ENGINE' && run.platform !== 'action' ? [{ run, t, newest: sorted.at(-1) as ConnectorRun }] : [];
      });
    });
    const pick = candidates.find((c) => healthOf(c.run.status) !== 'ok' && healthOf(c.newest.status) !== healthOf(c.run.status)) ?? candidates.find((c) => healthOf(c.run.status) !== 'ok');
    expect(pick, 'a connector run that did not succeed, 3 to 9 days back').toBeDefined();
    if (!pick) return;
    const profile = typeof pick.run.profile === 'string' ? pick.run.profile : (pick.run.profile?.profile_name ?? '');
    const sel = `stack="${STACK}", connector=${JSON.stringify(pick.run.bridge_name)}, profile=${JSON.stringify(profile)}`;
    const got = await sameEverywhere(`cmdb_connector_health{${sel}} == 1`, pick.t);
    expect(got.map((s) => s.metric.health)).toEqual([healthOf(pick.run.status)]);
    const ts = await sameEverywhere(`cmdb_connector_last_run_timestamp_seconds{${sel}}`, pick.t);
    expect(Number(ts[0]?.value[1])).toBe(runTime(pick.run, 'UTC'));
  });

  it("answers an Action's last-job status at a past time with the job of then", async () => {
    const actions = [...sim.dataset.actions.values()].filter((a) => a.jobs.length > 2);
    // A failed job 2 to 12 days back, asked a minute after the first step (5 minutes, the Action
    // job interval) that saw it, as a live poll would have seen it then.
    const jobs = actions.flatMap((a) => {
      const sorted = [...a.jobs].sort((x, y) => x.atMs - y.atMs);
      return sorted.flatMap((j, i) => {
        const next = sorted[i + 1];
        const t = Math.ceil(j.atMs / 1000 / 300) * 300 + 60;
        return t > nowS - 12 * DAY && t < nowS - 2 * DAY && (!next || next.atMs / 1000 > t + 600) ? [{ id: a.key, job: j, t }] : [];
      });
    });
    const pick = jobs.find((j) => j.job.row.action_status === 'FAILED') ?? jobs[0];
    expect(pick, 'an Action job 2 to 12 days back').toBeDefined();
    if (!pick) return;
    const got = await sameEverywhere(`cmdb_action_last_job_status{stack="${STACK}", action_id=${JSON.stringify(pick.id)}} == 1`, pick.t);
    expect(got.map((s) => s.metric.status)).toEqual([pick.job.row.action_status]);
    const at = await sameEverywhere(`cmdb_action_last_job_timestamp_seconds{stack="${STACK}", action_id=${JSON.stringify(pick.id)}}`, pick.t);
    const byStatus = await sameEverywhere(`cmdb_action_jobs{stack="${STACK}", action_id=${JSON.stringify(pick.id)}}`, pick.t);
    expect(byStatus.length).toBeGreaterThan(0);
    expect(Number(at[0]?.value[1])).toBe(Math.floor(pick.job.atMs / 1000));
  });

  it("the shipped dashboards' queries over backfilled families return data inside the range", async () => {
    const t = nowS - 7 * DAY;
    const info = await queryAt(`cmdb_connector_info{stack="${STACK}"}`, t);
    const first = info.map((s) => s.metric).sort((a, b) => `${a.connector}/${a.profile}`.localeCompare(`${b.connector}/${b.profile}`))[0];
    expect(first?.connector).toBeTruthy();
    const values = { ...GRAFANA_VALUES, job: JOB, instance: INSTANCE, stack: STACK, connector: first?.connector ?? '', profile: first?.profile ?? '' };
    const backfilled = new Set(BACKFILLED_FAMILIES.map((f) => f.name));
    const queries = allDashboardQueries(values);
    // A query over families the backfill leaves out (the license, the exporter's own metrics) or over
    // recording rules cannot find backfilled data; every other one must.
    const answerable = queries.filter((q) => {
      const names = analyse(q.expr).selectors.map((s) => s.metric);
      return names.length > 0 && names.every((n) => n !== undefined && backfilled.has(n));
    });
    expect(answerable.length).toBeGreaterThan(15);
    const empty: Array<{ where: string; expr: string }> = [];
    for (const q of answerable) {
      const got = await queryAt(q.expr, t);
      if (got.length === 0) empty.push(q);
    }
    expect(empty).toEqual([]);
  });

  it('writes the families and label sets the live exporter serves for the same configuration', async () => {
    const exporter = await startExporter({ args: ['--config', configFile], env: {} });
    await waitUntilReady(exporter);
    const scrape = (await http(`${exporter.url}/metrics`)).text;
    const live = labelSets(scrape.split('\n').filter((l) => l.startsWith('cmdb_')));
    const end = nowS - 3 * 3600 - 300;
    // Every family but the coverage mark, the one series only the backfill writes (for --fill-gaps).
    const series = await queryAt(`{__name__=~"cmdb_.+", __name__!=${JSON.stringify(COVERAGE_METRIC)}, stack="${STACK}"}`, end);
    const back = new Map<string, Set<string>>();
    for (const s of series) {
      const { __name__: name, job, instance, ...labels } = s.metric;
      expect([job, instance]).toEqual([JOB, INSTANCE]);
      const set = back.get(name as string) ?? new Set<string>();
      set.add(Object.keys(labels).sort().join(','));
      back.set(name as string, set);
    }
    // Every backfilled family is one the exporter serves, with the same label names.
    for (const [name, sets] of back) expect([name, [...sets]]).toEqual([name, [...(live.get(name) ?? new Set())]]);
    // Every served CMDB family is backfilled, or left out and listed in docs/backfill.md.
    const docs = readFileSync(join(REPO_ROOT, 'docs/backfill.md'), 'utf8');
    const patterns = [...docs.matchAll(/`(cmdb_\w*)\*`/g)].map((m) => m[1] as string);
    const listed = (n: string) => docs.includes(`\`${n}\``) || patterns.some((p) => n.startsWith(p));
    const missing = [...live.keys()].filter((n) => !back.has(n) && !listed(n));
    expect(missing).toEqual([]);
    // The same entities: connectors (with profiles) and Actions.
    const scraped = scrape.split('\n').flatMap((l) => parseSeries(l) ?? []);
    const entities = (list: ReadonlyArray<{ name: string; labels: Record<string, string> }>, name: string, keys: readonly string[]) =>
      [...new Set(list.filter((x) => x.name === name).map((x) => JSON.stringify(keys.map((k) => x.labels[k]))))].sort();
    const backSeries = series.map((x) => ({ name: x.metric.__name__ as string, labels: x.metric }));
    for (const [name, keys] of [
      ['cmdb_connector_info', ['connector', 'profile']],
      ['cmdb_action_info', ['action_id']],
    ] as const) {
      expect(entities(backSeries, name, keys)).toEqual(entities(scraped, name, keys));
    }
    expect(CATALOGUE.length).toBeGreaterThan(back.size);
  });
});

/** One sample line of an exposition: its name and label values (unescaped). */
function parseSeries(line: string): { name: string; labels: Record<string, string> } | undefined {
  const m = /^([a-zA-Z_:][\w:]*)(\{.*\})?\s/.exec(line);
  if (!m) return undefined;
  const labels: Record<string, string> = {};
  for (const x of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
    labels[x[1] as string] = (x[2] as string).replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
  }
  return { name: m[1] as string, labels };
}

/** Family → the sets of label names (sorted, comma-joined) among its series in an exposition. */
function labelSets(lines: readonly string[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of lines) {
    const m = /^([a-zA-Z_:][\w:]*)(\{.*\})?\s/.exec(line);
    if (!m) continue;
    const names = [...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="(?:[^"\\]|\\.)*"/g)].map((x) => x[1] as string).sort();
    const set = out.get(m[1] as string) ?? new Set<string>();
    set.add(names.join(','));
    out.set(m[1] as string, set);
  }
  return out;
}
