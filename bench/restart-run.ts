/**
 * `npm run bench -- --only restart`: a restart at the pace cell's size (issue 27). The simulator
 * serves the pace cell's ~7,600 connector runs at a slow page pace (by default 10 ms a row plus
 * 600 ms a page: a 2,000-row page takes ~20 s); the daemon runs in a process of its own (src/main.ts
 * through tsx, as `node dist/main.js` would) with the built-in defaults (but maxSeries, raised so that
 * every connector profile is exported). It is started, left until it serves every series, stopped
 * (SIGTERM or SIGKILL) and started again with the same arguments: without --storage.path, and with it.
 *
 * Reported per run: the time to every series at the first start and after the restart (the
 * restart's figure counts from the new process's spawn to the first scrape that holds every CMDB
 * series of the last scrape before the stop, with the same values), whether the first scrape
 * already did, the connector requests and bytes the new process read before it served everything,
 * and the busiest 60 s of requests the simulator saw over the whole run.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runKey } from '../src/api/connector-runs.js';
import type { ConnectorRun } from '../src/api/schemas.js';
import { CATALOGUE, family } from '../src/metrics/catalogue.js';
import type { Sample } from '../src/metrics/sample.js';
import { formatLabels, formatValue } from '../src/metrics/series-text.js';
import { readStateFile, stateFileOf } from '../src/persist/state-file.js';
import { storeStateFrom } from '../src/store/store-state.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { busiestWindow } from './budget.js';
import { until } from './children.js';
import { scrapeText, startDaemon, type Daemon } from './daemon.js';
import { bytes, count, ms, type Table } from './format.js';
import { PACE_SIZE } from './pace-run.js';
import { sizeByName } from './sizes.js';
import { benchState } from './state-run.js';

export interface RestartOptions {
  readonly msPerRow: number;
  readonly baseMs: number;
  /** How the first process is stopped. */
  readonly signal: 'SIGTERM' | 'SIGKILL';
  /** Start both processes with --storage.path. */
  readonly storage: boolean;
}

export interface RestartRun {
  readonly storage: boolean;
  readonly signal: 'SIGTERM' | 'SIGKILL';
  readonly rows: number;
  /** CMDB series of the last scrape before the stop. */
  readonly series: number;
  /** First start: seconds from spawn to every series. */
  readonly coldSeconds?: number;
  /** After the restart: seconds from spawn to a scrape with every series of the last one before the stop. */
  readonly restartSeconds?: number;
  /** Seconds from spawn to the first answered scrape of the new process, and whether it held them all. */
  readonly firstScrapeSeconds?: number;
  readonly firstScrapeComplete: boolean;
  /** Connector requests and bytes of the new process until it served every series. */
  readonly connectorRequests: number;
  readonly connectorBytes: number;
  /** Largest page size the new process asked the connector history for (2,000: a full scan). */
  readonly largestConnectorPage: number;
  /** The most requests the simulator saw in any 60 s of the whole run, and the budget. */
  readonly busiestMinute: number;
  readonly rateLimitPerMinute: number;
  readonly error?: string;
}

/**
 * Families whose values move with the clock, so only their presence is compared: the days until
 * the license expires (computed at scrape time), and the next ingestion run (the simulator answers
 * the next 5-minute slot after its clock, so a restart across a slot boundary reads a new value).
 */
const CLOCK_FAMILIES = new Set(['cmdb_license_days_until_expiry', 'cmdb_ingestion_next_run_timestamp_seconds']);
const CMDB_FAMILIES = new Set(CATALOGUE.filter((f) => f.endpoint !== undefined).map((f) => f.name));
const RATE = 50;
/** Each start is given up on when it has not served every series after this long. */
const MAX_MS = 900_000;

/** The CMDB series of an exposition: series key → value text. */
export function cmdbSeries(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    const key = line.slice(0, cut);
    const brace = key.indexOf('{');
    if (!CMDB_FAMILIES.has(brace < 0 ? key : key.slice(0, brace))) continue;
    out.set(key, line.slice(cut + 1));
  }
  return out;
}

/** Series of `reference` missing from `now` or with another value (scrape-time families: presence only). */
export function missingSeries(reference: ReadonlyMap<string, string>, now: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [key, value] of reference) {
    const brace = key.indexOf('{');
    const name = brace < 0 ? key : key.slice(0, brace);
    const seen = now.get(key);
    if (seen === undefined || (!CLOCK_FAMILIES.has(name) && seen !== value)) out.push(key);
  }
  return out;
}

/**
 * The series `stack`'s state file keeps, keyed and valued as the exposition writes them (none while
 * there is no file); the license's days until expiry are computed, not kept.
 */
export async function keptSeries(file: string, stack: string): Promise<Map<string, string>> {
  if (!existsSync(file)) return new Map();
  const store = ((await readStateFile(file)).value as { parts: { store?: unknown } }).parts.store;
  const endpoints = store === undefined ? [] : storeStateFrom(store);
  if (!endpoints) throw new Error(`${file} holds no store state this exporter reads`);
  const key = (s: Sample) => `${s.name}${formatLabels(family(s.name).labels, { stack, ...s.labels })}`;
  return new Map(endpoints.flatMap((e) => e.samples).map((s) => [key(s), formatValue(s.value)] as const));
}

/** The most of `times` (ms) within any 60 s. */
const busiestMinute = (times: readonly number[]) => busiestWindow([...times].sort((a, b) => a - b), 60_000).count;

/** Connector profiles (keys) in the simulator's history: the connector series are complete with them all. */
function expectedKeys(sim: SimulatorServer): number {
  return new Set(sim.dataset.history.all().map((row) => runKey(row as unknown as ConnectorRun))).size;
}

/** What is still missing for every series: every endpoint up, every connector key exported, no Action's jobs left to fetch. */
function incomplete(text: string, keys: number): string | undefined {
  const infos = text.match(/^cmdb_(connector_info|merger_last_run_timestamp_seconds|action_history_last_run_timestamp_seconds)\{/gm)?.length ?? 0;
  if (infos < keys) return `${infos} of ${keys} connector keys`;
  const down = text.match(/^cmdb_endpoint_up\{[^}]*\} 0$/m);
  if (down) return down[0];
  const backlog = text.match(/^cmdb_action_jobs_backlog\{[^}]*\} (\d+)$/m);
  return backlog?.[1] === '0' ? undefined : `Action jobs backlog ${backlog?.[1] ?? 'absent'}`;
}

export async function benchRestart(opts: RestartOptions, progress: (line: string) => void = () => undefined): Promise<RestartRun> {
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-bench-restart-'));
  const sim = await startSimulator({ size: PACE_SIZE, connectorPeriodSeconds: 86_400, connectorPace: { msPerRow: opts.msPerRow, baseMs: opts.baseMs } });
  // No ingestion run in progress: its tasks would move on with the clock, and the values compared with them.
  sim.scenario.finishIngestion('success');
  const state = sim.state();
  const config = join(dir, 'exporter.yaml');
  // maxSeries raised so that every connector profile is exported (the default cap stops at ~1,200 of them).
  const stack = { name: 'restart', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, maxSeries: 100_000, track: { assets: state.trackedAssets, users: state.trackedUsers } };
  writeFileSync(config, stringify({ stacks: [stack] }));
  const args = ['--config', config, ...(opts.storage ? ['--storage.path', join(dir, 'state')] : [])];
  const keys = expectedKeys(sim);
  const rows = state.counts.connectorRuns;
  const base = { storage: opts.storage, signal: opts.signal, rows, rateLimitPerMinute: RATE };
  const daemons: Daemon[] = [];
  try {
    progress(`restart: ${rows} runs at ${opts.msPerRow} ms a row + ${opts.baseMs} ms a page, ${opts.storage ? 'with' : 'without'} --storage.path`);
    const first = startDaemon(args);
    daemons.push(first);
    const firstUrl = await first.url;
    const cold = await until('complete first start', first.spawnedAt + MAX_MS, async () => {
      const text = await scrapeText(firstUrl);
      const missing = text === undefined ? 'no scrape' : incomplete(text, keys);
      return missing ?? (performance.now() - first.spawnedAt) / 1000;
    });
    progress(`restart: first start served every series after ${cold.toFixed(1)} s`);
    // A few seconds more: the polls that follow the first ones have happened; with state, until the
    // file holds every series served (written after polls that changed series, at most every 10 s).
    await new Promise((resolve) => setTimeout(resolve, 5000));
    if (opts.storage) {
      const file = stateFileOf(join(dir, 'state'), stack.name);
      await until('state file with every series', performance.now() + 120_000, async () => {
        const served = cmdbSeries((await scrapeText(firstUrl)) ?? '').size - 1;
        const kept = (await keptSeries(file, stack.name)).size;
        return kept === served ? true : `${kept} of ${served} series in the state file`;
      });
    }
    const reference = cmdbSeries((await scrapeText(firstUrl)) ?? '');
    await first.stop(opts.signal);
    const stoppedAt = sim.requests().length;

    const second = startDaemon(args);
    daemons.push(second);
    const url = await second.url;
    let firstScrape: { seconds: number; complete: boolean } | undefined;
    const restartSeconds = await until('complete restart', second.spawnedAt + MAX_MS, async () => {
      const text = await scrapeText(url);
      if (text === undefined) return 'no scrape';
      const missing = missingSeries(reference, cmdbSeries(text));
      const seconds = (performance.now() - second.spawnedAt) / 1000;
      firstScrape ??= { seconds, complete: missing.length === 0 };
      return missing.length === 0 ? seconds : `${missing.length} series missing or changed, e.g. ${missing.slice(0, 3).map((k) => `${k} ${reference.get(k)} now ${cmdbSeries(text).get(k)}`).join('; ')}`;
    });
    progress(`restart: after the restart every series after ${restartSeconds.toFixed(1)} s (first scrape ${firstScrape?.complete ? 'complete' : 'incomplete'})`);
    const after = sim.requests().slice(stoppedAt).filter((r) => r.endpoint === 'connector');
    const sizes = after.map((r) => Number(new URLSearchParams(r.rawQuery).get('size') ?? 0));
    return {
      ...base,
      series: reference.size,
      coldSeconds: cold,
      restartSeconds,
      firstScrapeSeconds: firstScrape?.seconds,
      firstScrapeComplete: firstScrape?.complete ?? false,
      connectorRequests: after.length,
      connectorBytes: after.reduce((n, r) => n + r.bytes, 0),
      largestConnectorPage: Math.max(0, ...sizes),
      busiestMinute: busiestMinute(sim.requests().map((r) => r.at)),
    };
  } catch (err) {
    const requests = sim.requests();
    return { ...base, series: 0, firstScrapeComplete: false, connectorRequests: 0, connectorBytes: 0, largestConnectorPage: 0, busiestMinute: busiestMinute(requests.map((r) => r.at)), error: (err as Error).message };
  } finally {
    for (const d of daemons) await d.stop();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The cell: restarts at the pace cell's size without state (as before issue 27), and with it after
 * a SIGTERM and a SIGKILL; then the state file at the large size.
 */
export async function benchRestarts(pace: { readonly msPerRow: number; readonly baseMs: number }, progress: (line: string) => void) {
  const runs: RestartRun[] = [];
  for (const [storage, signal] of [[false, 'SIGTERM'], [true, 'SIGTERM'], [true, 'SIGKILL']] as const) runs.push(await benchRestart({ ...pace, storage, signal }, progress));
  const large = sizeByName('large');
  return { ...pace, runs, state: large ? [await benchState(large, progress)] : [] };
}

/** The cell as tables: the restarts, and the state file at the large size. */
export function restartTables(f: Awaited<ReturnType<typeof benchRestarts>>): Table[] {
  const s = (x: number | undefined) => (x === undefined ? '–' : `${x.toFixed(1)} s`);
  return [
    {
      title: `Restart at the pace cell's size (${count(f.runs[0]?.rows ?? 0)} connector runs, ${f.msPerRow} ms a row plus ${f.baseMs} ms a page)`,
      head: ['state', 'stop', 'first start: every series', 'restart: first scrape', 'restart: every series', 'connector reads after the restart', 'busiest 60 s (budget)'],
      rows: f.runs.map((r) => [
        r.storage ? '--storage.path' : 'none',
        r.signal,
        s(r.coldSeconds),
        `${s(r.firstScrapeSeconds)}${r.firstScrapeComplete ? ' (complete)' : ''}`,
        r.error === undefined ? s(r.restartSeconds) : `failed: ${r.error}`,
        `${r.connectorRequests} (${bytes(r.connectorBytes)}, largest page ${r.largestConnectorPage})`,
        `${r.busiestMinute} (${r.rateLimitPerMinute})`,
      ]),
      numericFrom: 2,
    },
    {
      title: 'The state file, written after a first poll of every endpoint (the median of 3 writes by longest block), and read back by a new start() from the same directory',
      head: ['size', 'CMDB series', 'file (gzip)', 'a write', 'its CPU', 'longest event-loop block', 'start() reading it', 'every series served'],
      rows: f.state.map((x) => [x.size, count(x.series), bytes(x.fileBytes), ms(x.writeMs), ms(x.writeCpuMs), ms(x.writeMaxBlockMs), ms(x.startMs), ms(x.restoredMs)]),
      numericFrom: 1,
    },
  ];
}
