/**
 * A fleet end to end: the BUILT exporter with stacks from the main file and from `stacksDir`, a
 * real Prometheus whose only scrape job is config/prometheus/per-stack.yml's (http_sd_configs
 * pointed at GET /sd), and the project's generated rules. Proves that every stack is discovered as
 * its own target, that each target's scrape holds only its stack's series, that the per-stack
 * scrapes together equal the plain /metrics, that an alert fires with the right `stack` label, and
 * that a stack file added to the directory plus a SIGHUP shows up as a new target.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { parseExposition, type ParsedSample } from '../helpers/exposition.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { stopAllAndCheck } from './harness/processes.js';
import { fastRuleFiles, JOB, startPrometheus, type PrometheusApi, type Target } from './harness/prometheus.js';
import { http, makeTempDir, removeDir, REPO_ROOT, requirePart } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const GOOD = ['fleet-a', 'fleet-b'];
const FROM_DIR = 'fleet-c';
/** Wrong credentials: its endpoints fail, and only its alerts may fire. */
const BAD = 'fleet-bad';
const ADDED = 'fleet-new';

let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let api: PrometheusApi;

/** The shipped per-stack job, pointed at this exporter's /sd and refreshed every 2 s. */
function shippedJob(sdUrl: string): Record<string, unknown> {
  const shipped = parse(readFileSync(join(REPO_ROOT, 'config/prometheus/per-stack.yml'), 'utf8')) as { scrape_configs: Array<Record<string, unknown>> };
  const job = shipped.scrape_configs.find((j) => j.job_name === JOB);
  if (!job) throw new Error('config/prometheus/per-stack.yml has no cmdb-exporter job');
  return { ...job, http_sd_configs: [{ url: sdUrl, refresh_interval: '2s' }] };
}

const stackYaml = (name: string, secret: string) => ({ name, baseUrl: sim.url, clientId: sim.clientId, secret });

beforeAll(async () => {
  requirePart('prometheus');
  dir = makeTempDir('fleet');
  sim = await startSimulator({ live: false });
  const state = sim.state();
  mkdirSync(join(dir, 'stacks.d'));
  writeExporterConfig(dir, { stacks: [stackYaml(FROM_DIR, sim.secret)] }, 'stacks.d/c.yaml');
  const configFile = writeExporterConfig(dir, {
    stacksDir: 'stacks.d',
    defaults: {
      rateLimitPerMinute: 6000,
      actionJobsPerMinute: 6000,
      retries: { max: 0 },
      intervals: FAST_INTERVALS,
      track: { assets: state.trackedAssets, users: state.trackedUsers },
    },
    stacks: [...GOOD.map((n) => stackYaml(n, sim.secret)), stackYaml(BAD, 'not-the-secret')],
  });
  exporter = await startExporter({ args: ['--config', configFile], env: {} });
  await waitUntilReady(exporter, 60_000);
  ({ api } = await startPrometheus({ dir, target: '', ruleFiles: fastRuleFiles(), job: shippedJob(`${exporter.url}/sd`) }));
}, 120_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

/** Waits until Prometheus scraped every target of the job once, and exactly `stacks` have a stack. */
async function healthyTargets(stacks: readonly string[]): Promise<Target[]> {
  return waitFor(
    `targets of ${stacks.join(', ')} and the exporter, all scraped`,
    async () => {
      const targets = (await api.targets()).filter((t) => t.labels.job === JOB);
      const names = targets.map((t) => t.labels.stack ?? '').sort();
      const want = ['', ...stacks].sort();
      if (JSON.stringify(names) !== JSON.stringify(want)) return notYet(targets);
      return targets.every((t) => t.health === 'up') ? done(targets) : notYet(targets);
    },
    { timeoutMs: 60_000, intervalMs: 1000 },
  );
}

const key = (s: ParsedSample) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
async function scrape(url: string): Promise<ParsedSample[]> {
  const r = await http(url);
  expect(r.status, url).toBe(200);
  return parseExposition(r.text).samples;
}

describe('a fleet scraped through /sd', () => {
  const all = [...GOOD, BAD, FROM_DIR];

  it('discovers every stack, from the main file and from stacksDir, as its own target', async () => {
    const targets = await healthyTargets(all);
    for (const t of targets) {
      const stack = t.labels.stack;
      const url = new URL(t.scrapeUrl);
      expect(url.host).toBe(`127.0.0.1:${exporter.port}`);
      expect(url.pathname).toBe('/metrics');
      if (stack === undefined) expect(url.searchParams.get('only')).toBe('exporter');
      else expect(url.searchParams.get('stack')).toBe(stack);
    }
    // One `up` per stack, and one for the exporter itself.
    const up = await api.query(`up{job="${JOB}"}`);
    expect(up.map((s) => s.metric.stack ?? '').sort()).toEqual(['', ...all].sort());
  });

  it('each target\'s scrape holds only its stack\'s series, and Prometheus stores them under it', async () => {
    const targets = await healthyTargets(all);
    for (const t of targets) {
      const samples = await scrape(t.scrapeUrl);
      expect(samples.length, t.scrapeUrl).toBeGreaterThan(0);
      for (const s of samples) expect(s.labels.stack, `${t.scrapeUrl}: ${key(s)}`).toBe(t.labels.stack);
    }
    // No exported_stack: the series keep their own label (honor_labels in the shipped job).
    expect(await api.query('count({exported_stack!=""})')).toEqual([]);
    const assets = await api.query(`cmdb_assets{job="${JOB}"}`);
    expect(assets.map((s) => s.metric.stack).sort()).toEqual([...GOOD, FROM_DIR].sort());
  });

  it('the per-stack scrapes together equal the plain /metrics\' series', async () => {
    const targets = await healthyTargets(all);
    // Between two polls (10 s apart) the series set stands still; retry if a poll fell in between.
    await waitFor(
      'union of the per-stack scrapes equal to /metrics',
      async () => {
        const whole = await scrape(`${exporter.url}/metrics`);
        const parts = (await Promise.all(targets.map((t) => scrape(t.scrapeUrl)))).flat();
        const cmdb = (list: ParsedSample[]) => list.filter((s) => s.name.startsWith('cmdb_')).map(key).sort();
        const a = cmdb(parts);
        const b = cmdb(whole);
        return JSON.stringify(a) === JSON.stringify(b) ? done(undefined) : notYet({ onlyInParts: a.filter((k) => !b.includes(k)), onlyInWhole: b.filter((k) => !a.includes(k)) });
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
  });

  it('an alert fires with the right stack label in per-stack mode', async () => {
    const alerts = await waitFor(
      `CmdbEndpointDown and CmdbTokenRejected for ${BAD}`,
      async () => {
        const firing = (await api.alerts()).filter((a) => a.state === 'firing');
        const of = (name: string) => firing.filter((a) => a.labels.alertname === name && a.labels.stack === BAD);
        return of('CmdbEndpointDown').length > 0 && of('CmdbTokenRejected').length > 0 ? done(firing) : notYet(firing.map((a) => a.labels));
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const stacked = alerts.filter((a) => ['CmdbEndpointDown', 'CmdbTokenRejected'].includes(a.labels.alertname ?? ''));
    expect(new Set(stacked.map((a) => a.labels.stack))).toEqual(new Set([BAD]));
    // The exporter itself is up: no CmdbExporterDown, for any target.
    expect(alerts.filter((a) => a.labels.alertname === 'CmdbExporterDown')).toEqual([]);
  });

  it('a file added to stacksDir and a SIGHUP make a new target at the next SD refresh', async () => {
    writeExporterConfig(join(dir as string, 'stacks.d'), stackYaml(ADDED, sim.secret), 'new.yaml');
    process.kill(exporter.proc.pid as number, 'SIGHUP');
    await exporter.proc.waitForLine('reload log line', (l) => l.includes('configuration reloaded'), 20_000);
    const targets = await healthyTargets([...all, ADDED]);
    const added = targets.find((t) => t.labels.stack === ADDED);
    expect(added?.scrapeUrl).toContain(`stack=${ADDED}`);
    await waitFor(
      `cmdb_endpoint_up of ${ADDED} in Prometheus`,
      async () => {
        const up = await api.query(`cmdb_endpoint_up{job="${JOB}", stack="${ADDED}"}`);
        return up.length > 0 ? done(undefined) : notYet(up);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
  });
});
