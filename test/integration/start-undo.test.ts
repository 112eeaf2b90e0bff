/**
 * Issue 44: a start that fails undoes itself. With the listen address taken, start() rejects naming
 * the address, and of what it opened nothing is left: no lock in --storage.path (the next start
 * takes no lock "over"), no timer, worker thread or socket (watched from a child process of its
 * own, unref'd ones too), no request sent to the CMDB, and the state an earlier process kept stays
 * as it was, byte for byte, for the next start to restore.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CronLike } from '../../src/scheduler/scheduler.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { WAIT_MS, waitFor } from '../helpers/daemon.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Every group polls once at start, never again. */
const NO_CRON: CronLike = { schedule: () => ({ stop: () => undefined }) };

let sim: SimulatorServer;
let dir: string;
let taken: Server;

beforeAll(async () => {
  sim = await startSimulator({ size: { connectors: 5, runsPerConnector: 3, actions: 2 }, connectorPeriodSeconds: 86_400 });
  dir = mkdtempSync(join(tmpdir(), 'cmdb-start-undo-'));
  taken = createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
});

afterAll(async () => {
  taken?.close();
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** start() in a child process of its own: what it printed of the outcome and of what was left open, and how it exited. */
async function startInChild(config: unknown): Promise<{ outcome: { started: boolean; code?: string; message?: string; open: string[] }; exit: number | null; stderr: string }> {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/start-child.ts', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  // The child ends on its own once start() has failed: anything start() left running would keep it
  // (a bound against that hang, not a measure of speed).
  const guard = setTimeout(() => child.kill('SIGKILL'), WAIT_MS);
  const [exit] = (await once(child, 'close')) as [number | null];
  clearTimeout(guard);
  return { outcome: JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as never, exit, stderr };
}

describe('a start that fails', () => {
  it('with the listen address taken leaves no lock, timer, worker or socket, sends nothing, and keeps the state as it was', async () => {
    const state = join(dir, 'state');
    const stack = stackFor(sim, { name: 'undo', rateLimitPerMinute: 6000 });
    // An earlier process that polled everything and stopped: its state is kept.
    const first = await startExporter(configFor([stack], { storagePath: state }), { schedule: true, cron: NO_CRON, initialJitterMs: 0 });
    await waitFor(async () => first.app.landing().stacks.every((s) => s.endpoints.every((e) => e.state === 'ok')) || undefined, WAIT_MS, 'every endpoint polled');
    await first.app.close();
    const kept = readFileSync(join(state, 'stacks', 'undo.json.gz'));
    const record = readFileSync(join(state, 'budget.log'));
    const requests = sim.requests().length;

    const port = (taken.address() as { port: number }).port;
    const failed = await startInChild(configFor([stack], { listenAddress: `127.0.0.1:${port}`, storagePath: state }));
    expect(failed.exit, failed.stderr).toBe(0);
    expect(failed.outcome).toMatchObject({ started: false, code: 'EADDRINUSE', message: expect.stringContaining(`127.0.0.1:${port}`) });
    expect(failed.outcome.open, 'timers, workers, sockets or servers start() left open').toEqual([]);
    expect(sim.requests().length - requests, 'requests sent to the CMDB').toBe(0);
    expect(existsSync(join(state, 'cmdb-exporter.lock')), 'a lock left in --storage.path').toBe(false);
    expect(readFileSync(join(state, 'stacks', 'undo.json.gz')).equals(kept), 'the state file as it was').toBe(true);
    expect(readFileSync(join(state, 'budget.log')).equals(record), 'the request record as it was').toBe(true);

    // The next start takes no lock over and goes on from the state kept.
    const next = await startExporter(configFor([stack], { storagePath: state, logLevel: 'info' }));
    await next.app.close(0);
    expect(next.logText()).not.toContain('taken over');
    expect(next.logText()).toContain('state kept at the last stop restored');
  });
});
