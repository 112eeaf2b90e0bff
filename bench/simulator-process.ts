/**
 * The simulated CMDB in its own process, so that its CPU does not count against the exporter.
 * Usage: tsx bench/simulator-process.ts '<SimulatorSize knobs as JSON>' ['<SimulatorOptions as JSON>']
 * Prints one JSON line (SimulatorReady) on stdout once it listens on 127.0.0.1, then serves until
 * SIGTERM / SIGINT or until its parent goes away. Its request log is read over /_admin/requests
 * (requestLog here).
 */
import { pathToFileURL } from 'node:url';
import { startSimulator } from '../src/simulator/server.js';
import type { RequestRecord, SimulatorOptions, SimulatorSize } from '../src/simulator/api.js';

/** Where the simulator listens, its demo credential (not a secret of any real system) and its tracked names. */
export interface SimulatorAccess {
  readonly url: string;
  readonly clientId: string;
  readonly secret: string;
  readonly trackedAssets: readonly string[];
  readonly trackedUsers: readonly string[];
}

export interface SimulatorReady extends SimulatorAccess {
  readonly connectors: number;
  readonly connectorProfiles: number;
  readonly connectorRuns: number;
  readonly actions: number;
  readonly actionJobs: number;
  readonly buildMs: number;
}

/** A fixed clock (where the simulated-time cells start too): with live:false the data is the same on every run for the same size. */
export const CLOCK_MS = Date.parse('2026-11-21T12:00:00Z');

async function main(): Promise<void> {
  const knobs = JSON.parse(process.argv[2] ?? '{}') as Partial<SimulatorSize>;
  const options = JSON.parse(process.argv[3] ?? '{}') as Pick<SimulatorOptions, 'compression' | 'connectorPeriodSeconds' | 'historyDays'>;
  const t0 = performance.now();
  const sim = await startSimulator({ host: '127.0.0.1', port: 0, seed: 42, size: knobs, live: false, now: () => CLOCK_MS, ...options });
  const buildMs = performance.now() - t0;
  const state = sim.state();
  const ready: SimulatorReady = {
    url: sim.url,
    clientId: sim.clientId,
    secret: sim.secret,
    trackedAssets: state.trackedAssets,
    trackedUsers: state.trackedUsers,
    connectors: state.counts.connectors,
    connectorProfiles: state.connectors.reduce((n, c) => n + c.profiles.length, 0),
    connectorRuns: state.counts.connectorRuns,
    actions: state.counts.actions,
    actionJobs: state.counts.actionJobs,
    buildMs,
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);

  const stop = () => void sim.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // Started with an IPC channel by the benchmark: never outlive it.
  process.once('disconnect', stop);
}

/** The simulator's request log (every request it answered, oldest first); `clear` empties it instead. */
export async function requestLog(url: string, clear?: 'clear'): Promise<RequestRecord[]> {
  const res = await fetch(`${url}/_admin/requests`, { method: clear ? 'DELETE' : 'GET' });
  if (!res.ok) throw new Error(`simulator ${clear ? 'DELETE' : 'GET'} /_admin/requests: ${res.status}`);
  return clear ? [] : ((await res.json()) as RequestRecord[]);
}

/** A bearer token of the simulator, for its demo credential. */
export async function simulatorToken(sim: SimulatorReady): Promise<string> {
  const body = JSON.stringify({ clientID: sim.clientId, secret: sim.secret });
  const res = await fetch(`${sim.url}/CMDB/v1/access_token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return ((await res.json()) as { data: { token: string } }).data.token;
}

// Run only as the child process: the cells import requestLog and simulatorToken from here.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error('simulator process failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
