/**
 * Issue 44, end to end: the state folder (--storage.path) never takes the daemon down, and a start
 * that fails undoes itself. The built daemon (`node dist/main.js`) against the simulator:
 * - the folder turns read-only under the running daemon (a read-only bind mount laid over it in a
 *   mount namespace of the daemon's own, `unshare -rm`: the test changes nothing of the machine,
 *   and root, which ignores mode bits, meets EROFS as anyone would). Kept so for a minute, through
 *   several of the lock's refreshes and a write: the process lives, answers every scrape, logs each
 *   fault once, counts it, and once the folder is writable again writes its state there again;
 * - the listen address taken: it exits non-zero naming the address, sent no request to the CMDB,
 *   left no lock and the state an earlier process kept as it was, and the next start takes no lock
 *   "over" and goes on from that state.
 * Every wait is bounded by what it waits for; the times are printed, never asserted.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, startProcess, stopAllAndCheck } from './harness/processes.js';
import { baseEnv, http, makeTempDir, removeDir, REPO_ROOT } from './harness/tools.js';
import { done, notYet, StopWaiting, waitFor } from '../helpers/wait.js';

let dir: string;
let sim: SimulatorServer;
let config: string;
const STACK = 'folder';

beforeAll(async () => {
  dir = makeTempDir('state-folder');
  sim = await startSimulator({ seed: 11, connectorPeriodSeconds: 86_400, size: { connectors: 8, runsPerConnector: 4, actions: 3 } });
  sim.scenario.finishIngestion('success');
  const state = sim.state();
  config = writeExporterConfig(dir, {
    stacks: [{ name: STACK, baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, rateLimitPerMinute: 6000, intervals: FAST_INTERVALS, track: { assets: state.trackedAssets, users: state.trackedUsers } }],
  });
}, 60_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

/** The JSON log lines of a process with this message. */
const logged = (e: RunningExporter, msg: string) => e.proc.lines('stdout').filter((l) => l.includes(`"msg":"${msg}`));

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** When the stack's state file was written (its `writtenAt`), undefined while there is none. */
function writtenAt(state: string): number | undefined {
  const file = join(state, 'stacks', `${STACK}.json.gz`);
  if (!existsSync(file)) return undefined;
  return (JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as { writtenAt: number }).writtenAt;
}

/** Runs `args` in the daemon's mount namespace (and its user namespace, which `unshare -r` made). */
async function inDaemonNamespace(e: RunningExporter, args: string[]): Promise<void> {
  const run = await runToCompletion('nsenter', ['-t', String(e.proc.pid), '-U', '-m', '--preserve-credentials', ...args], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 30_000 });
  expect(run.code, `nsenter ${args.join(' ')}: ${run.stderr}`).toBe(0);
}

describe('the state folder', () => {
  it('turned read-only under a running daemon: it lives, answers every scrape, logs each fault once, and writes again once writable', async () => {
    const state = join(dir, 'ro-state');
    mkdirSync(state, { mode: 0o700 });
    const errors = `cmdb_exporter_state_writes_total{stack="${STACK}",result="error"}`;
    // The daemon in a mount namespace of its own, the folder a bind mount of itself there: a
    // read-only mount can then be laid over it and lifted again without touching the machine's.
    const daemon = await startExporter({
      argv: ['unshare', '-rm', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" "$0" && exec "$@"', state, process.execPath, 'dist/main.js'],
      args: ['--config', config, '--storage.path', state],
      env: {},
      name: 'daemon on a folder that turns read-only',
    });
    await waitUntilReady(daemon);
    await waitFor('a first state write', async () => (writtenAt(state) !== undefined ? done(undefined) : notYet('no state file yet')), { timeoutMs: 60_000, intervalMs: 250 });

    const failedScrapes: string[] = [];
    /** One scrape, as Prometheus would make it: every one must be answered. */
    const scrape = async (): Promise<string> => {
      if (daemon.proc.hasExited) throw new StopWaiting(`the daemon exited\n${daemon.proc.tail()}`);
      try {
        const r = await http(`${daemon.url}/metrics`);
        if (r.status !== 200) failedScrapes.push(`${r.status}`);
        return r.text;
      } catch (err) {
        failedScrapes.push(err instanceof Error ? err.message : String(err));
        throw err;
      }
    };

    await inDaemonNamespace(daemon, ['mount', '--bind', '-o', 'ro', state, state]);
    const readOnlyAt = Date.now() / 1000;
    const errorsBefore = value(await scrape(), errors) ?? 0;
    // A change of series, so that a write is due while the folder is read-only.
    sim.scenario.setAssetCount(4242);
    // Read-only for a minute (the check): the lock's refreshes (every 10 s) and a write
    // failed, each counted.
    const counted = await waitFor(
      'a minute read-only, the lock and a write failed, and the lock failed again at later refreshes',
      async () => {
        const text = await scrape();
        const n = (value(text, errors) ?? 0) - errorsBefore;
        const faults = { lock: logged(daemon, 'the lock of --storage.path cannot be refreshed').length, write: logged(daemon, 'could not write the state of this stack').length, errors: n };
        return faults.lock > 0 && faults.write > 0 && n >= 6 && Date.now() / 1000 - readOnlyAt >= 60 ? done(faults) : notYet(faults);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const readOnlySeconds = Date.now() / 1000 - readOnlyAt;

    await inDaemonNamespace(daemon, ['umount', state]);
    sim.scenario.setAssetCount(4243);
    await waitFor(
      'the lock refreshed and the state written again',
      async () => {
        await scrape();
        const again = { lock: logged(daemon, 'the lock of --storage.path is refreshed again').length, write: logged(daemon, 'the state of this stack is written again').length, writtenAt: writtenAt(state) };
        return again.lock > 0 && again.write > 0 && (again.writtenAt ?? 0) > readOnlyAt ? done(undefined) : notYet(again);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    console.log(`read-only for ${readOnlySeconds.toFixed(1)} s: ${counted.errors} errors counted, ${failedScrapes.length} scrapes unanswered; written again ${(Date.now() / 1000 - readOnlyAt - readOnlySeconds).toFixed(1)} s after it was writable`);

    expect(daemon.proc.hasExited).toBe(false);
    expect(failedScrapes, 'scrapes not answered 200').toEqual([]);
    expect(logged(daemon, 'the lock of --storage.path cannot be refreshed'), 'the lock\'s fault, logged once').toHaveLength(1);
    expect(logged(daemon, 'could not write the state of this stack'), 'the write\'s fault, logged once').toHaveLength(1);
    expect(logged(daemon, 'the lock of --storage.path cannot be refreshed')[0]).toContain('EROFS');
    expect(daemon.proc.output()).not.toMatch(/uncaught|unhandled/i);
    expect((await daemon.proc.stop()).code).toBe(0);
    expect(existsSync(join(state, 'cmdb-exporter.lock')), 'the lock removed at the stop').toBe(false);
  }, 420_000);

  it('with the listen address taken: exits non-zero naming it, sends nothing, leaves no lock and the state as it was', async () => {
    const state = join(dir, 'taken-state');
    // An earlier process's state, kept at its stop.
    const first = await startExporter({ args: ['--config', config, '--storage.path', state], env: {}, name: 'daemon before' });
    await waitUntilReady(first);
    expect((await first.proc.stop()).code).toBe(0);
    const kept = readFileSync(join(state, 'stacks', `${STACK}.json.gz`));
    const record = readFileSync(join(state, 'budget.log'));

    const taken: Server = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const address = `127.0.0.1:${(taken.address() as { port: number }).port}`;
    const requests = sim.requests().length;
    const started = Date.now();
    const failing = startProcess('daemon on a taken address', process.execPath, ['dist/main.js', '--config', config, '--storage.path', state, '--web.listen-address', address], { cwd: REPO_ROOT, env: baseEnv() });
    const exit = await failing.exited;
    const seconds = (Date.now() - started) / 1000;
    taken.close();
    console.log(`a start on a taken address exited ${JSON.stringify(exit)} after ${seconds.toFixed(1)} s`);

    expect(exit.code, failing.tail()).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(failing.output()).toContain(`cannot listen on ${address}`);
    expect(sim.requests().length - requests, 'requests to the CMDB').toBe(0);
    expect(existsSync(join(state, 'cmdb-exporter.lock')), 'a lock left in --storage.path').toBe(false);
    expect(readFileSync(join(state, 'stacks', `${STACK}.json.gz`)).equals(kept), 'the state file as it was').toBe(true);
    expect(readFileSync(join(state, 'budget.log')).equals(record), 'the request record as it was').toBe(true);

    const next = await startExporter({ args: ['--config', config, '--storage.path', state], env: {}, name: 'daemon after' });
    await waitUntilReady(next);
    expect(next.proc.output()).not.toContain('taken over');
    expect(next.proc.output()).toContain('state kept at the last stop restored');
    expect((await next.proc.stop()).code).toBe(0);
  }, 300_000);
});
