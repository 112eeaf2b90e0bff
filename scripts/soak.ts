/**
 * Soak run (issue 11): the daemon (src/main.ts as a child process) polls a simulator on accelerated
 * 10 s intervals while the simulator churns — connectors and Actions replaced by new ones, status
 * texts never seen before — and /metrics is sampled for the series count and the resident memory.
 * A warm-up comes first, long enough for every state set to fill up to its bound (MAX_EXTRA_STATES
 * new states per entity, one a poll, plus two intervals); the sampled window is then split in thirds
 * and the first third compared with the last: under any churn both should stay flat.
 *
 *   npm run soak -- --minutes 10 [--churn-ms 5000] [--sample-ms 5000]
 *
 * Exits 1 when the last third's series are more than 5 % or its RSS more than 10 % above the first third's.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { MAX_EXTRA_STATES } from '../src/collectors/state-memory.js';
import { startSimulator } from '../src/simulator/server.js';

export interface SoakOptions {
  /** Sampled window, after the warm-up. */
  seconds: number;
  churnMs?: number;
  sampleMs?: number;
  /** Print each sample as it is taken. */
  verbose?: boolean;
}

export interface SoakSample {
  atSeconds: number;
  /** Samples in /metrics that come from CMDB data or the exporter's own cmdb_* metrics (process_* and nodejs_* left out). */
  series: number;
  rssBytes: number;
}

export interface ThirdStats {
  seriesMax: number;
  rssMedian: number;
}

export interface SoakResult {
  samples: SoakSample[];
  first: ThirdStats;
  last: ThirdStats;
  /** last / first */
  seriesRatio: number;
  rssRatio: number;
  /** Entities and status texts the simulator churned through. */
  churnSteps: number;
}

const INTERVAL_SECONDS = 10;
/**
 * A status text that changes every poll adds one state a poll to its entity's state sets until the
 * bound (MAX_EXTRA_STATES), then replaces the oldest: the series grow for that many polls, then stay
 * flat. The warm-up covers the growth, so the sampled window shows whether they stay flat.
 */
const WARM_UP_MS = (MAX_EXTRA_STATES + 2) * INTERVAL_SECONDS * 1000;
const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Last third over first third: series may not grow by more than this (a correct exporter holds them exactly). */
export const SERIES_LIMIT = 1.05;
export const RSS_LIMIT = 1.1;
/** Every seeded connector and Action gets a new status text each churn step. */
const STATUS_TARGETS = 1000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

function statsOf(samples: SoakSample[]): ThirdStats {
  return { seriesMax: Math.max(...samples.map((s) => s.series)), rssMedian: median(samples.map((s) => s.rssBytes)) };
}

function readSample(text: string, atSeconds: number): SoakSample {
  let series = 0;
  let rssBytes = 0;
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('process_resident_memory_bytes ')) rssBytes = Number(line.split(' ')[1]);
    if (line.startsWith('cmdb_')) series++;
  }
  return { atSeconds, series, rssBytes };
}

/** Starts the daemon on an ephemeral port; resolves with its base URL from the "listening on" line. */
function startDaemon(configFile: string): Promise<{ base: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/main.ts'), '--config', configFile, '--web.listen-address', '127.0.0.1:0'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_PROXY: '*' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`the daemon did not start within 30 s:\n${out}`));
    }, 30_000);
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const m = /"msg":"listening on (http:\/\/[^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve({ base: m[1] as string, stop });
      }
    });
    child.stderr.resume();
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the daemon exited with ${code}:\n${out}`));
    });
  });
}

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const churnMs = opts.churnMs ?? 5000;
  const sampleMs = opts.sampleMs ?? 5000;
  let churnSteps = 0;
  // Full scans every poll (ignoreSort): a connector that is gone is gone at the next poll, so
  // entity churn shows as a steady count, not a saw-tooth with the full-scan period.
  const sim = await startSimulator({ live: true, ignoreSort: true, churn: { everyMs: churnMs, entities: 2, statusTexts: true, statusTargets: STATUS_TARGETS } });
  const counter = setInterval(() => churnSteps++, churnMs).unref();
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-soak-'));
  const state = sim.state();
  const i = INTERVAL_SECONDS;
  const configFile = join(dir, 'exporter.yaml');
  writeFileSync(
    configFile,
    stringify({
      logLevel: 'info',
      stacks: [
        {
          name: 'soak',
          baseUrl: sim.url,
          clientId: sim.clientId,
          secret: sim.secret,
          rateLimitPerMinute: 6000,
          track: { assets: state.trackedAssets, users: state.trackedUsers },
          intervals: { inventory: i, license: i, connectors: i, ingestion: i, actions: i, actionJobs: i, actionJobsRefresh: i, changes: i },
        },
      ],
    }),
  );
  const daemon = await startDaemon(configFile);
  const samples: SoakSample[] = [];
  try {
    await new Promise((r) => setTimeout(r, WARM_UP_MS));
    const started = Date.now();
    const count = Math.max(3, Math.floor((opts.seconds * 1000) / sampleMs));
    for (let n = 0; n < count; n++) {
      const text = await (await fetch(`${daemon.base}/metrics`)).text();
      const sample = readSample(text, Math.round((Date.now() - started) / 1000));
      samples.push(sample);
      if (opts.verbose) console.log(`${String(sample.atSeconds).padStart(5)} s  ${String(sample.series).padStart(6)} series  ${(sample.rssBytes / 2 ** 20).toFixed(1).padStart(7)} MB RSS`);
      await new Promise((r) => setTimeout(r, sampleMs));
    }
  } finally {
    clearInterval(counter);
    await daemon.stop();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const third = Math.max(1, Math.floor(samples.length / 3));
  const first = statsOf(samples.slice(0, third));
  const last = statsOf(samples.slice(-third));
  return { samples, first, last, seriesRatio: last.seriesMax / first.seriesMax, rssRatio: last.rssMedian / first.rssMedian, churnSteps };
}

export function formatSoak(r: SoakResult): string {
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`;
  return [
    `churn steps: ${r.churnSteps} (per step 2 connectors and 2 Actions replaced, every other connector and Action given a new status text)`,
    `series (max):  first third ${r.first.seriesMax}, last third ${r.last.seriesMax}, ratio ${r.seriesRatio.toFixed(3)}`,
    `RSS (median):  first third ${mb(r.first.rssMedian)}, last third ${mb(r.last.rssMedian)}, ratio ${r.rssRatio.toFixed(3)}`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { minutes: { type: 'string', default: '10' }, 'churn-ms': { type: 'string' }, 'sample-ms': { type: 'string' } },
  });
  const minutes = Number(values.minutes);
  if (!(minutes > 0 && minutes <= 24 * 60)) throw new Error(`--minutes must be a number of minutes (0 < n ≤ 1440), got ${values.minutes}`);
  console.log(`soak: ${minutes} min after a ${WARM_UP_MS / 1000} s warm-up, every interval ${INTERVAL_SECONDS} s`);
  const result = await runSoak({
    seconds: minutes * 60,
    churnMs: values['churn-ms'] === undefined ? undefined : Number(values['churn-ms']),
    sampleMs: values['sample-ms'] === undefined ? undefined : Number(values['sample-ms']),
    verbose: true,
  });
  console.log(formatSoak(result));
  const ok = result.seriesRatio <= SERIES_LIMIT && result.rssRatio <= RSS_LIMIT;
  console.log(ok ? 'soak: flat (series within 5 %, RSS within 10 %)' : 'soak: NOT flat (series above 1.05 or RSS above 1.10 of the first third)');
  process.exitCode = ok ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 2;
  });
}
