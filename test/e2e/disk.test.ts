/**
 * Issue 33, end to end: what the built exporter leaves on disk, by both commands.
 * - A daemon with --storage.path and a backfill left incomplete (one endpoint answering 500) against
 *   the simulator: no planted secret (nor the stack's secret, nor a token) in any file they leave,
 *   gzip read decompressed, and no file or folder readable by group or others (the TSDB blocks and
 *   the metric data meant for Prometheus aside). The daemon's current token, kept for a backfill
 *   given its folder, is 0600 while it runs and gone once it stops.
 * - A second daemon on the same --storage.path exits 2 naming the holder, while the first keeps
 *   serving; once the first stops, a new one starts on it.
 * - With the package snappyjs (and snappy) unloadable: --version, --check-config, the daemon (ready,
 *   cmdb_assets served) and a backfill into blocks work; only a remote-write backfill says it needs it.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, startProcess, stopAllAndCheck } from './harness/processes.js';
import { baseEnv, http, leakedSecrets, makeTempDir, removeDir, REPO_ROOT } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const DAY = 86_400;
let dir: string;
let sim: SimulatorServer;
let config: string;

beforeAll(async () => {
  dir = makeTempDir('disk');
  sim = await startSimulator({ seed: 7, connectorPeriodSeconds: DAY, historyDays: 3, size: { connectors: 20, runsPerConnector: 5, actions: 6 } });
  config = writeExporterConfig(dir, {
    stacks: [{ name: 'disk', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, rateLimitPerMinute: 6000, backfillRequestsPerMinute: 6000, intervals: FAST_INTERVALS, track: { assets: sim.state().trackedAssets, users: sim.state().trackedUsers } }],
  });
}, 60_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

function walk(path: string): string[] {
  return readdirSync(path, { withFileTypes: true }).flatMap((e) => {
    const p = join(path, e.name);
    return e.isDirectory() ? [p, ...walk(p)] : [p];
  });
}

/** A TSDB block (promtool's ULID folder) or the OpenMetrics text promtool reads: metric data meant for Prometheus. */
const forPrometheus = (rel: string) => /(^|\/)[0-9A-Z]{26}(\/|$)/.test(rel) || rel.endsWith('.om');

async function scrape(e: RunningExporter): Promise<string> {
  return (await http(`${e.url}/metrics`)).text;
}

async function ready(e: RunningExporter): Promise<void> {
  await waitFor('/readyz 200', async () => ((await http(`${e.url}/readyz`)).status === 200 ? done(undefined) : notYet('503')), { timeoutMs: 90_000, intervalMs: 250 });
}

describe('what the exporter leaves on disk', () => {
  it('holds no secret in any file, and no file or folder that group or others can read', async () => {
    const state = join(dir, 'state');
    const out = join(dir, 'out');
    const daemon = await startExporter({ args: ['--config', config, '--storage.path', state], env: {}, name: 'daemon' });
    await ready(daemon);
    // The connector series (whose runs carry the planted texts) served, then written.
    await waitFor(
      'the state file to hold the connector series',
      async () => {
        const file = join(state, 'stacks', 'disk.json.gz');
        const text = statSync(file, { throwIfNoEntry: false }) ? gunzipSync(readFileSync(file)).toString('utf8') : '';
        return text.includes('cmdb_connector_health') ? done(undefined) : notYet(text.length);
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    // Its current token, for a backfill given this folder: the daemon user's alone while it runs, gone once it stops.
    expect(statSync(join(state, 'cmdb-exporter.tokens.json')).mode & 0o777).toBe(0o600);
    expect((await daemon.proc.stop()).code).toBe(0);
    expect(statSync(join(state, 'cmdb-exporter.tokens.json'), { throwIfNoEntry: false })).toBeUndefined();

    sim.addFault({ endpoint: 'data_ingestion', status: 500 });
    const now = Math.floor(Date.now() / 1000);
    const backfill = await runToCompletion(process.execPath, ['dist/main.js', 'backfill', '--config', config, '--from', String(now - 2 * DAY), '--to', String(now - 3 * 3600), '--out', out, '--instance', 'x:9873'], {
      cwd: REPO_ROOT,
      env: baseEnv(),
      timeoutMs: 240_000,
    });
    sim.clearFaults();
    expect(backfill.code, backfill.stderr).toBe(1);
    expect(backfill.stdout).toContain('ingestion run list');
    const answers = readFileSync(join(out, 'cmdb-backfill.answers.jsonl'), 'utf8');
    // The connector history is in it (its runs carry the planted texts), reduced.
    expect(answers).toContain('"k":"connector-history"');

    const secrets = [...PLANTED_SECRETS, sim.secret, ...sim.issuedTokens()];
    const files = [state, out, ...walk(state), ...walk(out)];
    const leaks: string[] = [];
    const open: string[] = [];
    for (const path of files) {
      const rel = path.slice(dir.length + 1);
      const st = statSync(path);
      if (!forPrometheus(rel) && (st.mode & 0o077) !== 0) open.push(`${rel} ${(st.mode & 0o777).toString(8)}`);
      if (!st.isFile()) continue;
      let bytes = readFileSync(path);
      if (path.endsWith('.gz')) bytes = gunzipSync(bytes);
      const found = leakedSecrets(bytes.toString('latin1'), secrets);
      if (found.length > 0) leaks.push(`${rel}: ${found.join(', ')}`);
    }
    expect(files.map((f) => f.slice(dir.length + 1)).filter((f) => !forPrometheus(f)).sort()).toEqual(
      ['out', 'out/cmdb-backfill.answers.jsonl', 'out/cmdb-backfill.state.json', 'state', 'state/budget.log', 'state/stacks', 'state/stacks/disk.json.gz'].sort(),
    );
    expect(leaks, 'secrets in files').toEqual([]);
    expect(open, 'files or folders that group or others can read').toEqual([]);
  }, 420_000);

  it('refuses a second daemon on the same --storage.path, naming the holder, while the first serves on', async () => {
    const state = join(dir, 'state-twice');
    const first = await startExporter({ args: ['--config', config, '--storage.path', state], env: {}, name: 'first daemon' });
    await ready(first);
    const started = Date.now();
    const second = startProcess('second daemon', process.execPath, ['dist/main.js', '--config', config, '--storage.path', state], { cwd: REPO_ROOT, env: baseEnv({ EXPORTER_LISTEN_ADDRESS: '127.0.0.1:0' }) });
    // Its exit is the event, bounded against a hang; how long it took is reported.
    await waitFor('the second daemon to exit', () => second.hasExited || notYet(second.tail()));
    const exit = await second.exited;
    const seconds = (Date.now() - started) / 1000;
    expect(exit, second.tail()).toEqual({ code: 2, signal: null });
    expect(second.output()).toContain(`${state} (--storage.path) is in use by pid ${first.proc.pid}`);
    console.log(`second daemon exited ${JSON.stringify(exit)} after ${seconds.toFixed(1)} s: ${second.lines('stderr').join(' ')}`);
    expect((await http(`${first.url}/metrics`)).status).toBe(200);
    expect((await http(`${first.url}/readyz`)).status).toBe(200);
    expect((await first.proc.stop()).code).toBe(0);
    const third = await startExporter({ args: ['--config', config, '--storage.path', state], env: {}, name: 'daemon after the first stopped' });
    await ready(third);
    expect(third.proc.output()).not.toContain('taken over');
    await third.proc.stop();
  }, 240_000);

  it('runs the daemon and a blocks backfill without the compression package; only remote write needs it', async () => {
    // A copy of the package whose node_modules lacks snappy and snappyjs: they cannot resolve.
    const copy = join(dir, 'no-snappy');
    mkdirSync(join(copy, 'node_modules'), { recursive: true });
    cpSync(join(REPO_ROOT, 'dist'), join(copy, 'dist'), { recursive: true });
    cpSync(join(REPO_ROOT, 'package.json'), join(copy, 'package.json'));
    const skip = /^(snappy|snappyjs|@napi-rs)$/;
    for (const name of readdirSync(join(REPO_ROOT, 'node_modules'))) if (!skip.test(name)) symlinkSync(join(REPO_ROOT, 'node_modules', name), join(copy, 'node_modules', name));
    const run = (args: string[]) => runToCompletion(process.execPath, [join(copy, 'dist/main.js'), ...args], { cwd: copy, env: baseEnv(), timeoutMs: 180_000 });
    const probe = await runToCompletion(process.execPath, ['-e', "import('snappyjs').then(() => console.log('found'), () => console.log('missing'))"], { cwd: copy, env: baseEnv(), timeoutMs: 30_000 });
    expect(probe.stdout.trim()).toBe('missing');

    expect((await run(['--version'])).code).toBe(0);
    const check = await run(['--check-config', '--config', config]);
    expect([check.code, check.stdout]).toEqual([0, expect.stringContaining('configuration OK')]);
    const daemon = await startExporter({ argv: [process.execPath, join(copy, 'dist/main.js')], args: ['--config', config], env: {}, name: 'daemon without snappy' });
    await ready(daemon);
    expect(await scrape(daemon)).toMatch(/^cmdb_assets\{stack="disk"\} \d+/m);
    await daemon.proc.stop();

    const now = Math.floor(Date.now() / 1000);
    const range = ['--config', config, '--from', String(now - DAY), '--to', String(now - 3 * 3600), '--instance', 'x:9873'];
    const blocks = await runToCompletion(process.execPath, [join(copy, 'dist/main.js'), 'backfill', ...range, '--out', join(dir, 'no-snappy-blocks')], { cwd: copy, env: { PATH: '' }, timeoutMs: 180_000 });
    expect(blocks.code, blocks.stderr).toBe(0);
    const remote = await run(['backfill', ...range, '--out', join(dir, 'no-snappy-remote'), '--remote-write.url', 'http://127.0.0.1:9/api/v1/write']);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain('--remote-write.url: remote write compresses its requests with the package snappyjs, which cannot be loaded');
  }, 420_000);
});
