/**
 * `npm run bench:flood`: floods the exporter's own HTTP server and reports how it holds up
 * (docs/security.md quotes the figures). Two phases, each bounded in count and time:
 *
 * - scrapes: N concurrent gzip scrapes of /metrics (default 10,000) against ~20k series; every
 *   request should be answered 200 or promptly 503, and the exporter's peak RSS (VmHWM) stay low.
 * - idle: M idle connections (default 20,000, spread over worker processes so that no process
 *   needs more than ~10,000 descriptors) held open while the exporter keeps polling the simulator:
 *   upstream requests must go on (the simulator's request count grows, no EMFILE in the log).
 *
 * The exporter runs as the daemon does (src/main.ts through tsx) from --exporter-dir, so the same
 * script measures an older checkout too. Everything talks to 127.0.0.1 only.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { startChild, untilReady, type Child } from './children.js';
import { startDaemon } from './daemon.js';
import { saveFigures } from './format.js';
import { residentBytes } from './proc.js';
import type { SimulatorReady } from './simulator-process.js';
import { sizeByName } from './sizes.js';
import { distribution } from './stats.js';
import { idleFlood, type Exporter } from './flood-idle.js';

const USAGE = `Usage: npm run bench:flood -- [options]

  --phase scrapes|idle|both   what to run (default both)
  --scrapes N                 concurrent gzip scrapes (default 10000)
  --idle N                    idle connections kept open (default 20000; closed ones are reopened)
  --idle-workers N            processes that hold the idle connections (default 2)
  --hold-seconds N            how long the idle connections are held (default 45)
  --deadline-seconds N        time limit of the scrape phase (default 120)
  --exporter-dir DIR          checkout whose src/main.ts is run (default this one)
  --exporter-arg ARG          extra flag for the exporter (repeatable)
  --json FILE                 save the figures to FILE (default: bench/results/flood-<time>.json)
  -h, --help                  show this help`;

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));

function count(name: string, text: string | undefined, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0 || n > max) throw new Error(`--${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(text)}`);
  return n;
}

function parseOptions(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      phase: { type: 'string', default: 'both' },
      scrapes: { type: 'string' },
      idle: { type: 'string' },
      'idle-workers': { type: 'string' },
      'hold-seconds': { type: 'string' },
      'deadline-seconds': { type: 'string' },
      'exporter-dir': { type: 'string' },
      'exporter-arg': { type: 'string', multiple: true },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help' as const;
  const phase = values.phase as 'scrapes' | 'idle' | 'both';
  if (!['scrapes', 'idle', 'both'].includes(phase)) throw new Error(`--phase must be scrapes, idle or both`);
  return {
    phase,
    scrapes: count('scrapes', values.scrapes, 10_000, 50_000),
    idle: count('idle', values.idle, 20_000, 100_000),
    idleWorkers: count('idle-workers', values['idle-workers'], 2, 16),
    holdSeconds: count('hold-seconds', values['hold-seconds'], 45, 600),
    deadlineSeconds: count('deadline-seconds', values['deadline-seconds'], 120, 600),
    exporterDir: resolve(values['exporter-dir'] ?? REPO),
    exporterArgs: values['exporter-arg'] ?? [],
    json: values.json,
  };
}

type Options = Exclude<ReturnType<typeof parseOptions>, 'help'>;

async function startExporter(opts: Options, sim: SimulatorReady, dir: string): Promise<Exporter> {
  const ten = '10s';
  const configFile = join(dir, 'exporter.yaml');
  writeFileSync(
    configFile,
    stringify({
      logLevel: 'info',
      defaults: {
        rateLimitPerMinute: 6000,
        maxSeries: 100_000,
        intervals: { inventory: ten, license: ten, connectors: ten, ingestion: ten, actions: ten, actionJobs: ten, actionJobsRefresh: ten, changes: ten },
        track: { assets: sim.trackedAssets, users: sim.trackedUsers },
      },
    }),
  );
  const exporter = startDaemon(['--config', configFile, '--web.listen-address', '127.0.0.1:0', ...opts.exporterArgs], {
    cwd: opts.exporterDir,
    env: { CMDB_BASE_URL: sim.url, CMDB_CLIENT_ID: sim.clientId, CMDB_SECRET: sim.secret, CMDB_STACK: 'flood' },
  });
  try {
    return { ...exporter, port: Number(new URL(await exporter.url).port) };
  } catch (err) {
    await exporter.stop();
    throw err;
  }
}

function openFilesLimit(pid: number): string {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const [soft, hard] = line?.replace('Max open files', '').trim().split(/\s+/) ?? [];
    return `${soft ?? '?'} soft / ${hard ?? '?'} hard`;
  } catch {
    return 'unknown';
  }
}

interface Answer {
  readonly status: number | null;
  readonly error?: string;
  /** From connect() to the status line (or the error). */
  readonly ms: number;
}

/** One GET over a fresh socket, `Connection: close`; resolves with the status line's code. */
function rawGet(port: number, path: string, headers: string, deadlineMs: number): Promise<Answer> {
  return new Promise((resolveAnswer) => {
    const t0 = performance.now();
    let status: number | null = null;
    let head = '';
    let settled = false;
    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolveAnswer({ status, error: status === null ? error : undefined, ms: performance.now() - t0 });
    };
    const socket = connect({ host: '127.0.0.1', port });
    const timer = setTimeout(() => finish('deadline'), deadlineMs);
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Connection: close\r\n\r\n`));
    socket.on('data', (chunk: Buffer) => {
      if (status !== null) return; // the body is read and dropped
      head += chunk.toString('latin1', 0, Math.min(chunk.length, 64));
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      if (m) status = Number(m[1]);
    });
    socket.on('end', () => finish('closed before a status line'));
    socket.on('close', () => finish('closed before a status line'));
    socket.on('error', (err: NodeJS.ErrnoException) => finish(err.code ?? err.message));
  });
}

/** Latency in whole ms: count, p50, p99, max (null for none). */
function latency(values: number[]) {
  const d = distribution(values);
  const r = (v: number) => (Number.isFinite(v) ? Math.round(v) : null);
  return { n: d.count, p50: r(d.p50), p99: r(d.p99), max: r(d.max) };
}

async function scrapeFlood(opts: Options, exporter: Exporter) {
  const t0 = performance.now();
  const answers = await Promise.all(
    Array.from({ length: opts.scrapes }, () => rawGet(exporter.port, '/metrics', 'Accept-Encoding: gzip\r\n', opts.deadlineSeconds * 1000)),
  );
  const byOutcome: Record<string, number> = {};
  for (const a of answers) {
    const key = a.status !== null ? String(a.status) : `error ${a.error ?? '?'}`;
    byOutcome[key] = (byOutcome[key] ?? 0) + 1;
  }
  return {
    requests: opts.scrapes,
    wallSeconds: Math.round((performance.now() - t0) / 100) / 10,
    outcomes: byOutcome,
    latency200: latency(answers.filter((a) => a.status === 200).map((a) => a.ms)),
    latency503: latency(answers.filter((a) => a.status === 503).map((a) => a.ms)),
    peakRssBytes: (await residentBytes(exporter.child.pid ?? 0))?.hwm ?? null,
  };
}

async function main(argv: string[]): Promise<void> {
  const opts = parseOptions(argv);
  if (opts === 'help') return console.log(USAGE);
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-flood-'));
  const medium = sizeByName('medium');
  let sim: Child | undefined;
  try {
    sim = await startChild('simulator-process.ts', [JSON.stringify(medium?.knobs ?? {})]);
    const ready = sim.ready as SimulatorReady;
    const result: Record<string, unknown> = { exporterDir: opts.exporterDir, exporterArgs: opts.exporterArgs };
    // Each phase gets a fresh exporter: the aftermath of one flood must not count against the next.
    const phases = opts.phase === 'both' ? (['scrapes', 'idle'] as const) : ([opts.phase] as const);
    for (const phase of phases) result[phase] = await runPhase(phase, opts, ready, dir);
    console.log(JSON.stringify(result, null, 2));
    saveFigures('flood', result, opts.json);
  } finally {
    await sim?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runPhase(phase: 'scrapes' | 'idle', opts: Options, ready: SimulatorReady, dir: string): Promise<Record<string, unknown>> {
  const exporter = await startExporter(opts, ready, dir);
  try {
    const port = exporter.port;
    await untilReady(`http://127.0.0.1:${port}`, 180_000);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    const start = {
      exporterOpenFiles: openFilesLimit(exporter.child.pid ?? 0),
      series,
      metricsBytes: Buffer.byteLength(text),
      rssAtStartBytes: (await residentBytes(exporter.child.pid ?? 0))?.rss ?? null,
    };
    console.error(`exporter ready: ${series} series, ${start.metricsBytes} bytes; open files ${start.exporterOpenFiles}`);
    let figures: Record<string, unknown>;
    if (phase === 'scrapes') {
      console.error(`scrapes: ${opts.scrapes} concurrent gzip scrapes (at most ${opts.deadlineSeconds} s)…`);
      figures = await scrapeFlood(opts, exporter);
    } else {
      console.error(`idle: ${opts.idle} idle connections held ${opts.holdSeconds} s…`);
      figures = await idleFlood(opts, exporter);
    }
    return { ...start, ...figures, exporterAlive: exporter.child.exitCode === null };
  } finally {
    await exporter.stop();
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
