/**
 * `--fill-gaps` against a real Prometheus that scrapes the built exporter (job cmdb-exporter) and
 * takes remote write: its history of the exporter (up, cmdb_endpoint_up and the CMDB series) has a
 * 2-hour hole. The command, given no --instance, takes the live target's, finds exactly that hole,
 * prints it and fills it; the series are continuous afterwards, no timestamp twice; and a second
 * look finds no gap.
 *
 * The hours before now cannot be scraped in a test, so the history is written into Prometheus as a
 * scrape would have left it: `up` and the exporter's `cmdb_endpoint_up` every scrape interval, and
 * the CMDB series by backfills of the time around the hole.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteWriteClient } from '../../src/backfill/remote-write.js';
import { encodeLabels, writeRequestBody } from '../../src/backfill/write-request.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { JOB, startPrometheus, type PrometheusApi } from './harness/prometheus.js';
import { baseEnv, http, makeTempDir, removeDir, REPO_ROOT, requireBuild } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'gaps';
const SCRAPE = 15;
const NOW = Math.floor(Date.now() / 1000);
// The history: 9 h back to 3 h back, the hole of 2 h from 7 h back (on scrape times).
const FROM = Math.floor((NOW - 9 * 3600) / SCRAPE) * SCRAPE;
const TO = NOW - 3 * 3600 - 600;
const HOLE = [FROM + 2 * 3600, FROM + 4 * 3600] as const;

let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let api: PrometheusApi;
let config: string;
let instance: string;

async function rawSamples(selector: string, at: number, range: number): Promise<number[]> {
  const r = await http(`${api.url}/api/v1/query?query=${encodeURIComponent(`${selector}[${range}s]`)}&time=${at}`);
  const body = JSON.parse(r.text) as { data: { result: Array<{ values: Array<[number, string]> }> } };
  return (body.data.result[0]?.values ?? []).map((v) => v[0]);
}

function backfill(args: string[]) {
  return runToCompletion(process.execPath, ['dist/main.js', 'backfill', '--config', config, ...args], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 170_000 });
}

beforeAll(async () => {
  requireBuild();
  dir = makeTempDir('backfill-gaps');
  sim = await startSimulator({ seed: 11, live: false, connectorPeriodSeconds: 3 * 3600, historyDays: 1, size: { runsPerConnector: 4, connectors: 4, actions: 3, jobsPerAction: 8 } });
  config = writeExporterConfig(dir, { logLevel: 'info', stacks: [{ name: STACK, baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, rateLimitPerMinute: 6000, backfillRequestsPerMinute: 6000 }] });
  exporter = await startExporter({ args: ['--config', config], env: {} });
  await waitUntilReady(exporter);
  instance = `127.0.0.1:${exporter.port}`;
  const prometheus = await startPrometheus({ dir, target: instance, ruleFiles: new Map(), interval: `${SCRAPE}s`, remoteWrite: { outOfOrderTimeWindow: '30d' } });
  api = prometheus.api;
  await waitFor('the live target to be up', async () => ((await api.query(`up{instance="${instance}"} == 1`)).length === 1 ? done(undefined) : notYet('not yet')), { timeoutMs: 60_000, intervalMs: 1000 });

  // What scrapes would have left: up and cmdb_endpoint_up every 15 s, but in the hole.
  const times = [];
  for (let t = FROM; t <= TO; t += SCRAPE) if (t < HOLE[0] || t > HOLE[1]) times.push(t * 1000);
  const ones = times.map(() => 1);
  const client = new RemoteWriteClient({ url: `${api.url}/api/v1/write`, headers: {}, tls: { insecureSkipVerify: false }, timeoutSeconds: 30, maxSamplesPerSend: 100_000, retryForSeconds: 60 });
  await client.send(
    writeRequestBody([
      { labels: encodeLabels({ __name__: 'up', job: JOB, instance }), timestamps: times, values: ones },
      { labels: encodeLabels({ __name__: 'cmdb_endpoint_up', job: JOB, instance, stack: STACK, endpoint: 'metrics_data' }), timestamps: times, values: ones },
    ]),
  );
  await client.close();
  // ...and the CMDB series around the hole, as backfills.
  for (const [from, to, out] of [
    [FROM, HOLE[0] - 1, 'before'],
    [HOLE[1] + 1, TO, 'after'],
  ] as const) {
    const r = await backfill(['--from', String(from), '--to', String(to), '--instance', instance, '--out', join(dir, out), '--remote-write.url', `${api.url}/api/v1/write`]);
    if (r.code !== 0) throw new Error(`backfill ${out} exited ${String(r.code)}:\n${r.stdout}\n${r.stderr}`);
  }
}, 300_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

describe('--fill-gaps', () => {
  it('finds the 2-hour hole with the live instance, fills exactly it, and the series are continuous afterwards', async () => {
    const before = await rawSamples(`cmdb_assets{stack="${STACK}"}`, TO, TO - FROM + 1);
    expect(before.filter((t) => t > HOLE[0] && t < HOLE[1])).toEqual([]);

    const args = ['--from', String(FROM), '--to', String(TO), '--fill-gaps', '--prometheus.url', api.url, '--remote-write.url', `${api.url}/api/v1/write`];
    const r = await backfill([...args, '--out', join(dir as string, 'fill')]);
    const output = `${r.stdout}\n${r.stderr}`;
    expect(r.code, output).toBe(0);
    expect(r.stdout).toContain(`instance label of stack ${STACK}: ${instance} (the live target of job ${JOB} in ${api.url})`);
    expect(r.stdout).toMatch(/searched 9h(\d+m)? up to 3h1\dm ago, scrape interval 15s \(the target's own, in \/api\/v1\/targets\)/);
    const gaps = [...r.stdout.matchAll(/^ {2}(\S+) to (\S+) \(/gm)].map((m) => [Date.parse(m[1] as string) / 1000, Date.parse(m[2] as string) / 1000]);
    expect(gaps, output).toHaveLength(1);
    // From the first missed scrape to the last: only Prometheus' evidence of scrapes and the
    // backfills' coverage marks count, never a family's sample reaching forward over the hole. The
    // start exactly, on Prometheus 3 (whose windows leave their left edge open) as on 2: the time
    // the first missed scrape was due.
    expect(gaps[0]?.[0], output).toBe(HOLE[0]);
    expect(gaps[0]?.[1], output).toBe(HOLE[1]);

    for (const selector of [`cmdb_assets{stack="${STACK}"}`, `cmdb_connector_info{stack="${STACK}"}`]) {
      const after = await rawSamples(selector, TO, TO - FROM + 1);
      expect(new Set(after).size, selector).toBe(after.length);
      // At most one 300-s step between samples, plus the one second between the two backfills that
      // wrote the history around the hole (they end at HOLE[0]-1 and start at HOLE[1]+1): when the
      // range falls on a multiple of 300 s, that second lands inside one step.
      const MAX_STEP = 300 + 1;
      const longest = Math.max(...after.slice(1).map((t, i) => t - (after[i] as number)));
      const holes = after.slice(1).flatMap((t, i) => (t - (after[i] as number) > MAX_STEP ? [`${after[i]}..${t} (hole ${HOLE[0]}..${HOLE[1]})`] : []));
      expect([selector, longest <= MAX_STEP, holes]).toEqual([selector, true, []]);
      expect(after[0]).toBeLessThanOrEqual(FROM + 300);
      expect(after.at(-1)).toBeGreaterThanOrEqual(TO - 300);
      // Only the hole was written: outside it the samples are the ones that were there.
      if (selector.startsWith('cmdb_assets')) expect(after.filter((t) => t < HOLE[0] || t > HOLE[1])).toEqual(before);
    }

    // Filled is not missing: another look finds no gap.
    const again = await backfill([...args, '--out', join(dir as string, 'again')]);
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toMatch(/gaps of stack gaps .*: none/);
    expect(again.stdout).toMatch(/no gaps \(searched 9h(\d+m)? up to 3h1\dm ago\): nothing to read or write/);
  });
});

