/**
 * `npm run bench:restarts -- [--runs 10] [--busy 2] [--signal both]`: restart without a blackout,
 * counted over many runs (issue 44). Each run starts the built daemon (`node dist/main.js`, as
 * users run it; `npm run build` first) with --storage.path against a simulator of its own, every
 * group polled every 10 s; once every endpoint has served, after a random 0–10 s (so that the stop
 * falls anywhere between two state writes), it stops the daemon (kill -9 or SIGTERM) and starts it
 * again on the same folder. `--busy N` keeps N other processes spinning meanwhile (both cores busy).
 *
 * Per run, of the first scrape the new process answers:
 * - its time from the spawn, and whether it holds every CMDB series the state file kept at the
 *   stop, with the same value (what a restart can serve): the run is good when it does within 5 s;
 * - whether it also holds every series the last scrape before the stop served, and with the same
 *   values (after kill -9, what changed in the last seconds before it, later than the last write,
 *   is not kept: a series new in an endpoint that had others, or a new value, is written within 10 s).
 * The license's days until expiry and the next ingestion run move with the clock: presence only.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { stateFileOf } from '../src/persist/state-file.js';
import { startSimulator } from '../src/simulator/server.js';
import { until } from './children.js';
import { scrapeText, startDaemon, type Daemon } from './daemon.js';
import { cmdbSeries, keptSeries, missingSeries } from './restart-run.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const INTERVALS = { inventory: '10s', license: '10s', connectors: '10s', ingestion: '10s', actions: '10s', actionJobs: '10s', actionJobsRefresh: '10s', changes: '10s', queries: '10s' };
/** What "at the first scrape" means: within this many seconds of the new process's spawn. */
const FIRST_SCRAPE_SECONDS = 5;

const USAGE = `Usage: npm run bench:restarts -- [options]

  --runs N        runs per signal (default 10)
  --busy N        processes spinning meanwhile, to keep the cores busy (default 2)
  --signal S      SIGKILL, SIGTERM or both (default both)
  --seed N        first simulator seed (default 1; each run takes the next)`;

const scrape = (url: string) => scrapeText(url, 30_000);

/** Every endpoint up (a first poll of each answered), the connector series served. */
function complete(body: string): boolean {
  return /^cmdb_endpoint_up\{/m.test(body) && !/^cmdb_endpoint_up\{[^}]*\} 0$/m.test(body) && /^cmdb_connector_info\{/m.test(body);
}

/**
 * One run: the new process's first scrape (seconds from its spawn), its start marks and the load then,
 * and how much of what was kept and of what was served before the stop that scrape held.
 */
async function oneRun(signal: 'SIGKILL' | 'SIGTERM', seed: number) {
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-bench-restarts-'));
  const sim = await startSimulator({ seed, size: { connectors: 30, profilesPerConnector: 2, runsPerConnector: 10, actions: 6 }, connectorPeriodSeconds: 86_400 });
  const daemons: Daemon[] = [];
  try {
    // No ingestion run in progress: its tasks would move on with the clock.
    sim.scenario.finishIngestion('success');
    const state = sim.state();
    const config = join(dir, 'exporter.yaml');
    const stack = { name: 'loop', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, rateLimitPerMinute: 600, intervals: INTERVALS, track: { assets: state.trackedAssets, users: state.trackedUsers } };
    writeFileSync(config, stringify({ stacks: [stack] }));
    const args = ['--config', config, '--storage.path', join(dir, 'state')];

    const first = startDaemon(args, { built: true });
    daemons.push(first);
    const firstUrl = await first.url;
    await until('scrape with every endpoint served', performance.now() + 180_000, async () => (complete((await scrape(firstUrl)) ?? '') ? true : first.lines.slice(-10).join('\n')));
    // Anywhere between two writes of the state (every 10 s after a change of series).
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 10_000));
    const before = cmdbSeries((await scrape(firstUrl)) ?? '');
    await first.stop(signal);
    const keptAtStop = await keptSeries(stateFileOf(join(dir, 'state'), stack.name), stack.name);

    const load = loadavg()[0] ?? 0;
    const second = startDaemon(args, { built: true });
    daemons.push(second);
    const url = await second.url;
    let body: string | undefined;
    while (body === undefined && second.child.exitCode === null) body = await scrape(url);
    const firstScrapeSeconds = (performance.now() - second.spawnedAt) / 1000;
    const after = cmdbSeries(body ?? '');
    const keptMissing = missingSeries(keptAtStop, after);
    const servedMissing = missingSeries(before, after);
    const good = keptMissing.length === 0 && firstScrapeSeconds <= FIRST_SCRAPE_SECONDS && (signal === 'SIGKILL' || servedMissing.length === 0);
    const example = [...keptMissing, ...servedMissing][0];
    const servedAbsent = [...before.keys()].filter((k) => !after.has(k)).length;
    return { signal, firstScrapeSeconds, start: { ...second.marks }, load, kept: keptAtStop.size, keptMissing: keptMissing.length, served: before.size, servedMissing: servedMissing.length, servedAbsent, good, ...(example ? { example } : {}) };
  } finally {
    for (const d of daemons) await d.stop();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

type LoopRun = Awaited<ReturnType<typeof oneRun>>;

function line(i: number, r: LoopRun): string {
  const served = r.signal === 'SIGKILL' ? `; of what was served ${r.served - r.servedMissing}/${r.served} the same, ${r.servedAbsent} absent` : '';
  const s = (x: number | undefined) => (x === undefined ? '?' : x.toFixed(1));
  const start = ` (first log line ${s(r.start.firstLine)} s, listening ${s(r.start.listened)} s after ${s(r.start.cpuSeconds)} s of CPU; load ${r.load.toFixed(1)})`;
  return `${r.signal} run ${i}: first scrape ${r.firstScrapeSeconds.toFixed(1)} s${start}, kept series served ${r.kept - r.keptMissing}/${r.kept}${served}${r.example ? ` (e.g. ${r.example})` : ''}: ${r.good ? 'good' : 'BLACKOUT'}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '10' }, busy: { type: 'string', default: '2' }, signal: { type: 'string', default: 'both' }, seed: { type: 'string', default: '1' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(USAGE);
  if (!existsSync(join(ROOT, 'dist/main.js'))) throw new Error('dist/main.js is missing: run `npm run build` first');
  const runs = Number(values.runs);
  const signals = values.signal === 'both' ? (['SIGKILL', 'SIGTERM'] as const) : ([values.signal as 'SIGKILL' | 'SIGTERM'] as const);
  const busy = Array.from({ length: Number(values.busy) }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  let seed = Number(values.seed);
  try {
    for (const signal of signals) {
      const results = [];
      for (let i = 1; i <= runs; i++) {
        const r = await oneRun(signal, seed++);
        results.push(r);
        console.log(line(i, r));
      }
      const times = results.map((r) => r.firstScrapeSeconds).sort((a, b) => a - b);
      const whole = results.filter((r) => r.servedAbsent === 0).length;
      console.log(
        `${signal}: ${results.filter((r) => r.good).length} of ${runs} runs served every kept series at a first scrape within ${FIRST_SCRAPE_SECONDS} s (first scrape ${times[0]?.toFixed(1)}–${times.at(-1)?.toFixed(1)} s, ${busy.length} busy processes); ${whole} of ${runs} had every series of the last scrape before the stop`,
      );
    }
  } finally {
    for (const b of busy) b.kill('SIGKILL');
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
