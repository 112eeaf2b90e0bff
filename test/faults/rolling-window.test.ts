/**
 * The request budget at the service's limit, from the first second (issues 25 and 37): at
 * rateLimitPerMinute 60, a CMDB that counts arrivals in any rolling 60 s refuses nothing, however
 * busy the intervals keep the budget, also while the exporter starts and opens its connections on a
 * loaded machine.
 *
 * Three exporters start at once, each a real daemon process (src/main.ts) against its own real
 * simulator refusing the 61st request of any rolling 60 s (429 with Retry-After), over HTTPS as the
 * real service (each new connection a TLS handshake), with every group polled every 10 s (about 100
 * requests a minute asked of a budget of 60), while two busy loops keep both cores full. Before issue 37 a request was stamped for the budget's window before its
 * connection existed: three exporters starting at once on a loaded machine put 62 requests in a
 * 60 s and drew 429s.
 *
 * Real time, bounded in count (three exporters, two busy loops) and in time: ROLLING_WINDOW_SECONDS,
 * the length of the scenario (default 180 in the fault suite; the claim of the issue is ten minutes:
 * ROLLING_WINDOW_SECONDS=600). What the server saw is the claim here, so it is read from its log as it
 * arrived; that the budget was the limit is read from each exporter (its requests waited for it),
 * not from a throughput on the wall clock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { RequestRecord } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { makeCa, makeCert } from '../helpers/certs.js';
import { runDaemon, type Daemon } from '../helpers/daemon.js';
import { listeningUrl } from '../helpers/exporter.js';
import { parseExposition, sampleValue } from '../helpers/exposition.js';
import { busiestMinute } from './matrix.js';

const SECONDS = Number(process.env.ROLLING_WINDOW_SECONDS ?? 180);
const EXPORTERS = 3;
const BUSY_LOOPS = 2;
const RATE = 60;

const sims: SimulatorServer[] = [];
const daemons: Daemon[] = [];
const busy: ChildProcess[] = [];
const tmp = mkdtempSync(join(tmpdir(), 'cmdb-rolling-'));

afterAll(async () => {
  for (const loop of busy) loop.kill('SIGKILL');
  await Promise.all(daemons.map((d) => d.stop('SIGKILL')));
  await Promise.all(sims.map((s) => s.close()));
  rmSync(tmp, { recursive: true, force: true });
});

/** A busy loop on one core, as another program on the machine would be. */
function busyLoop(): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'for(;;);'], { stdio: 'ignore' });
  busy.push(child);
  return child;
}

/** The configuration file of exporter `i`: one stack at the service's limit, every group every 10 s. */
function configFile(i: number, sim: SimulatorServer): string {
  const state = sim.state();
  const every = '10s';
  const config = {
    listenAddress: '127.0.0.1:0',
    // info: the "listening on" line names the port each one picked.
    logLevel: 'info',
    stacks: [
      {
        name: `edge-${i}`,
        baseUrl: sim.url,
        tls: { caFile: join(tmp, 'ca.crt') },
        clientId: sim.clientId,
        secret: '${CMDB_SECRET}',
        rateLimitPerMinute: RATE,
        actionJobsPerMinute: RATE,
        retries: { max: 3, minDelaySeconds: 0.5, maxDelaySeconds: 5, maxRetryAfterSeconds: 60 },
        track: { assets: state.trackedAssets, users: state.trackedUsers },
        intervals: { inventory: every, license: every, connectors: every, ingestion: every, actions: every, actionJobs: every, actionJobsRefresh: '60s', changes: every },
      },
    ],
  };
  const file = join(tmp, `exporter-${i}.yaml`);
  writeFileSync(file, stringify(config));
  return file;
}

interface Figures {
  readonly requests: number;
  readonly refused: readonly string[];
  readonly admitted: number;
  /** Most requests that reached the simulator in any 60 s (refused ones included). */
  readonly busiestArrivals: number;
  /** Most admitted requests in any 60 s (what the server counts). */
  readonly busiestAdmitted: number;
  /**
   * The shortest time in which RATE + 1 admitted requests arrived (seconds): the budget keeps RATE + 1
   * of its own sends at least 62 s apart, so what is under 62 s here is the margin that the time
   * between a send and its arrival ate; under 60 s the server refuses.
   */
  readonly tightestSeconds?: number;
  /** From the first request to the end of the run. */
  readonly spanSeconds: number;
}

function tightest(times: readonly number[], n: number): number | undefined {
  const at = [...times].sort((a, b) => a - b);
  let best: number | undefined;
  for (let i = 0; i + n - 1 < at.length; i++) best = Math.min(best ?? Infinity, (at[i + n - 1] as number) - (at[i] as number));
  return best === undefined ? undefined : best / 1000;
}

function figuresOf(log: readonly RequestRecord[], endedAt: number): Figures {
  const requests = log.filter((r) => r.endpoint !== null);
  const refused = requests.filter((r) => r.status === 429);
  const admitted = requests.filter((r) => r.status !== 429);
  const first = requests[0]?.at ?? endedAt;
  return {
    requests: requests.length,
    refused: refused.map((r) => new Date(r.at).toISOString()),
    admitted: admitted.length,
    busiestArrivals: busiestMinute(requests.map((r) => r.at)),
    busiestAdmitted: busiestMinute(admitted.map((r) => r.at)),
    tightestSeconds: tightest(admitted.map((r) => r.at), RATE + 1),
    spanSeconds: (endedAt - first) / 1000,
  };
}

/** cmdb_rate_limit_wait_seconds_total of the daemon's stack, from its /metrics at the "listening on" line's address. */
async function budgetWaitSeconds(d: Daemon, stack: string): Promise<number | undefined> {
  const url = d.output().split('\n').map(listeningUrl).find((u) => u !== undefined);
  if (url === undefined) throw new Error(`no "listening on" line:\n${d.output().slice(-4000)}`);
  const m = parseExposition(await (await fetch(`${url}/metrics`)).text());
  return sampleValue(m, 'cmdb_rate_limit_wait_seconds_total', { stack });
}

describe('the request budget and a server counting any rolling 60 s', () => {
  it(
    `refuses nothing in ${SECONDS} s from the start: ${EXPORTERS} exporters starting at once at rateLimitPerMinute ${RATE}, ${BUSY_LOOPS} busy loops`,
    { timeout: SECONDS * 1000 + 180_000 },
    async () => {
      makeCa(tmp);
      makeCert(tmp, 'server');
      const tls = { cert: readFileSync(join(tmp, 'server.crt'), 'utf8'), key: readFileSync(join(tmp, 'server.key'), 'utf8') };
      for (let i = 0; i < EXPORTERS; i++) {
        const sim = await startSimulator({ live: true, tls, seed: 42 + i, size: { actions: 12, trackedAssets: 4, trackedUsers: 3 } });
        sim.setRateLimit({ perMinute: RATE, retryAfter: true });
        sims.push(sim);
      }
      const files = sims.map((sim, i) => configFile(i, sim));
      for (let i = 0; i < BUSY_LOOPS; i++) busyLoop();
      // At once: every process spawned in the same turn of the event loop.
      for (const [i, file] of files.entries()) daemons.push(runDaemon(['--config.file', file], { CMDB_SECRET: (sims[i] as SimulatorServer).secret }));
      // The scenario's length; a daemon that exits meanwhile ends the run at once, with its output.
      let timer: NodeJS.Timeout | undefined;
      const exited = await Promise.race([new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), SECONDS * 1000))), ...daemons.map((d) => d.exited.then(() => d))]);
      clearTimeout(timer);
      if (exited) throw new Error(`an exporter exited during the run:\n${exited.output().slice(-4000)}`);
      // Each exporter's requests waited for its budget: the budget, not the intervals, was the limit.
      const waited = await Promise.all(daemons.map((d, i) => budgetWaitSeconds(d, `edge-${i}`)));
      await Promise.all(daemons.map((d) => d.stop('SIGTERM')));
      const endedAt = Date.now();
      const figures = sims.map((sim) => figuresOf(sim.requests(), endedAt));
      console.log(
        `rolling window, ${SECONDS} s, ${EXPORTERS} exporters, ${BUSY_LOOPS} busy loops:\n` +
          figures
            .map((f, i) => `  exporter ${i}: ${f.requests} requests in ${f.spanSeconds.toFixed(0)} s, ${f.refused.length} x 429, busiest 60 s ${f.busiestArrivals} arrived / ${f.busiestAdmitted} admitted, ${RATE + 1} admitted in ${f.tightestSeconds?.toFixed(2) ?? '–'} s at the tightest`)
            .join('\n'),
      );
      for (const [i, f] of figures.entries()) {
        expect(waited[i], `exporter ${i}: seconds its requests waited for the budget`).toBeGreaterThan(0);
        expect(f.busiestArrivals).toBeLessThanOrEqual(RATE);
      }
      expect(figures.map((f) => f.refused)).toEqual(figures.map(() => []));
    },
  );
});
