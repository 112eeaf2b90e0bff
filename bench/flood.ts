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
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { startChild, type Child } from './children.js';
import { residentBytes } from './proc.js';
import type { SimulatorReady } from './simulator-process.js';
import { sizeByName } from './sizes.js';

const USAGE = `Usage: npm run bench:flood -- [options]

  --phase scrapes|idle|both   what to run (default both)
  --scrapes N                 concurrent gzip scrapes (default 10000)
  --idle N                    idle connections kept open (default 20000; closed ones are reopened)
  --idle-workers N            processes that hold the idle connections (default 2)
  --hold-seconds N            how long the idle connections are held (default 45)
  --deadline-seconds N        time limit of the scrape phase (default 120)
  --exporter-dir DIR          checkout whose src/main.ts is run (default this one)
  --exporter-arg ARG          extra flag for the exporter (repeatable)
  --json FILE                 also write the figures as JSON
  -h, --help                  show this help`;

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));

interface Options {
  readonly phase: 'scrapes' | 'idle' | 'both';
  readonly scrapes: number;
  readonly idle: number;
  readonly idleWorkers: number;
  readonly holdSeconds: number;
  readonly deadlineSeconds: number;
  readonly exporterDir: string;
  readonly exporterArgs: readonly string[];
  readonly json?: string;
}

function count(name: string, text: string | undefined, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0 || n > max) throw new Error(`--${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(text)}`);
  return n;
}

function parseOptions(argv: string[]): Options | 'help' {
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
  if (values.help) return 'help';
  const phase = values.phase;
  if (phase !== 'scrapes' && phase !== 'idle' && phase !== 'both') throw new Error(`--phase must be scrapes, idle or both`);
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

// ---------------------------------------------------------------- the exporter under test

interface Exporter {
  readonly child: ChildProcess;
  readonly port: number;
  readonly lines: string[];
  stop(): Promise<void>;
}

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
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', '--config', configFile, '--web.listen-address', '127.0.0.1:0', ...opts.exporterArgs],
    {
      cwd: opts.exporterDir,
      env: { PATH: process.env.PATH ?? '', CMDB_BASE_URL: sim.url, CMDB_CLIENT_ID: sim.clientId, CMDB_SECRET: sim.secret, CMDB_STACK: 'flood' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const lines: string[] = [];
  let buffered = '';
  const onData = (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    // Bounded: a flood can make the exporter log a lot; keep the first 20,000 lines.
    for (const line of parts) if (lines.length < 20_000) lines.push(line);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const port = await waitFor('the "listening on" line', 60_000, () => {
    for (const line of lines) {
      const m = /"url":"https?:\/\/[^"]*:(\d+)"/.exec(line);
      if (m && line.includes('listening on')) return Number(m[1]);
    }
    if (child.exitCode !== null) throw new Error(`exporter exited:\n${lines.slice(-20).join('\n')}`);
    return undefined;
  });
  return {
    child,
    port,
    lines,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await new Promise((r) => child.once('exit', r));
      clearTimeout(killer);
    },
  };
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function openFilesLimit(pid: number): string {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const [soft, hard] = line?.replace('Max open files', '').trim().split(/\s+/) ?? [];
    return `${soft ?? '?'} soft / ${hard ?? '?'} hard`;
  } catch {
    return 'unknown';
  }
}

// ---------------------------------------------------------------- one raw HTTP request

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

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? null;
}

function latency(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (v: number | null) => (v === null ? null : Math.round(v));
  return { n: sorted.length, p50: r(percentile(sorted, 50)), p99: r(percentile(sorted, 99)), max: r(sorted.at(-1) ?? null) };
}

// ---------------------------------------------------------------- phase 1: concurrent scrapes

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

// ---------------------------------------------------------------- phase 2: idle connections

interface WorkerReport {
  readonly opened: number;
  readonly failed: Record<string, number>;
  /** Connections the server closed while they were held. */
  readonly closedByServer: number;
  readonly reconnects: number;
  readonly openAtEnd: number;
}

/**
 * A worker process: opens `n` idle connections and keeps `n` open for the hold time — a connection
 * the server closes is opened again (at most 5 × n times), as a determined client would do, so the
 * exporter's descriptors stay under pressure for the whole hold. Reports, then closes them all.
 */
async function idleWorker(port: number, n: number, holdMs: number): Promise<void> {
  const sockets = new Set<Socket>();
  const failed: Record<string, number> = {};
  let opened = 0;
  let closedByServer = 0;
  let reconnects = 0;
  let holding = true;
  const open = (done?: () => void) => {
    const s = connect({ host: '127.0.0.1', port });
    const timer = setTimeout(() => done?.(), 20_000);
    sockets.add(s);
    s.on('connect', () => {
      opened++;
      clearTimeout(timer);
      done?.();
    });
    s.on('error', (err: NodeJS.ErrnoException) => {
      failed[err.code ?? 'error'] = (failed[err.code ?? 'error'] ?? 0) + 1;
      clearTimeout(timer);
      done?.();
    });
    s.on('close', () => {
      sockets.delete(s);
      if (!holding) return;
      closedByServer++;
      if (reconnects < 5 * n) {
        reconnects++;
        // A short pause, so a refusing server is not met with a tight reconnect loop.
        setTimeout(() => holding && open(), 200);
      }
    });
    s.on('data', () => undefined);
  };
  const until = Date.now() + holdMs;
  await Promise.all(
    // Spread the connects over ~2 s so the listen backlog is not the only thing measured.
    Array.from({ length: n }, (_, i) => new Promise<void>((done) => setTimeout(() => open(done), Math.floor((i / n) * 2000)))),
  );
  process.send?.({ kind: 'opened', opened });
  await sleep(Math.max(0, until - Date.now()));
  holding = false;
  const report: WorkerReport = { opened, failed, closedByServer, reconnects, openAtEnd: sockets.size };
  process.send?.({ kind: 'report', report });
  for (const s of sockets) s.destroy();
}

/** What one scrape shows of the upstream side: the ingestion endpoint's last success, requests by outcome. */
interface Probe {
  readonly ok: boolean;
  readonly ingestionLastSuccess: number | null;
  readonly requestsByOutcome: Record<string, number>;
  readonly error?: string;
}

async function probeScrape(port: number): Promise<Probe> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
    const text = await r.text();
    const m = /^cmdb_endpoint_last_success_timestamp_seconds\{[^}]*endpoint="data_ingestion"[^}]*\} (\S+)/m.exec(text);
    const requestsByOutcome: Record<string, number> = {};
    for (const line of text.matchAll(/^cmdb_endpoint_requests_total\{[^}]*outcome="([^"]+)"[^}]*\} (\S+)/gm)) {
      const outcome = line[1] ?? '?';
      requestsByOutcome[outcome] = (requestsByOutcome[outcome] ?? 0) + Number(line[2]);
    }
    return { ok: r.status === 200, ingestionLastSuccess: m ? Number(m[1]) : null, requestsByOutcome };
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    return { ok: false, ingestionLastSuccess: null, requestsByOutcome: {}, error: cause ? String(cause) : (err as Error).message };
  }
}

function difference(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) !== 0) out[k] = v - (before[k] ?? 0);
  return out;
}

async function idleFlood(opts: Options, exporter: Exporter) {
  const before = await probeScrape(exporter.port);
  const logLines0 = exporter.lines.length;
  const per = Math.ceil(opts.idle / opts.idleWorkers);
  const self = fileURLToPath(import.meta.url);
  const workers = Array.from({ length: opts.idleWorkers }, (_, i) =>
    fork(self, ['--idle-worker', String(exporter.port), String(Math.min(per, opts.idle - i * per)), String(opts.holdSeconds * 1000)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const reports = workers.map(
    (w) =>
      new Promise<WorkerReport>((done, fail) => {
        w.on('message', (m: { kind: string; report?: WorkerReport }) => {
          if (m.kind === 'report' && m.report) done(m.report);
        });
        w.once('exit', (code) => fail(new Error(`idle worker exited with ${String(code)} before reporting`)));
      }),
  );
  // While the connections are held: a scrape every 5 s (bounded by the hold time).
  const probes: Array<{ ok: boolean; error?: string }> = [];
  const probeUntil = Date.now() + opts.holdSeconds * 1000;
  while (Date.now() < probeUntil - 2_000 && probes.length < 200) {
    await sleep(5_000);
    const p = await probeScrape(exporter.port);
    probes.push({ ok: p.ok, error: p.error });
  }
  const held = await Promise.all(reports);
  await sleep(2_000);
  const after = await probeScrape(exporter.port);
  const emfile = exporter.lines.slice(logLines0).filter((l) => /EMFILE|ENFILE/.test(l)).length;
  for (const w of workers) w.kill('SIGTERM');
  return {
    connections: opts.idle,
    holdSeconds: opts.holdSeconds,
    opened: held.reduce((s, r) => s + r.opened, 0),
    failedToOpen: held.reduce<Record<string, number>>((acc, r) => {
      for (const [k, v] of Object.entries(r.failed)) acc[k] = (acc[k] ?? 0) + v;
      return acc;
    }, {}),
    closedByServerWhileHeld: held.reduce((s, r) => s + r.closedByServer, 0),
    reconnects: held.reduce((s, r) => s + r.reconnects, 0),
    openAtEnd: held.reduce((s, r) => s + r.openAtEnd, 0),
    upstreamRequestsByOutcome: difference(after.requestsByOutcome, before.requestsByOutcome),
    scrapesDuringHold: `${probes.filter((p) => p.ok).length}/${probes.length} ok`,
    scrapeErrors: [...new Set(probes.filter((p) => !p.ok).map((p) => p.error ?? 'status'))],
    ingestionLastSuccessAdvancedSeconds:
      before.ingestionLastSuccess !== null && after.ingestionLastSuccess !== null ? after.ingestionLastSuccess - before.ingestionLastSuccess : null,
    emfileLogLines: emfile,
    peakRssBytes: (await residentBytes(exporter.child.pid ?? 0))?.hwm ?? null,
  };
}

// ---------------------------------------------------------------- main

async function main(argv: string[]): Promise<void> {
  if (argv[0] === '--idle-worker') {
    await idleWorker(Number(argv[1]), Number(argv[2]), Number(argv[3]));
    return;
  }
  const opts = parseOptions(argv);
  if (opts === 'help') {
    console.log(USAGE);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-flood-'));
  const medium = sizeByName('medium');
  let sim: Child | undefined;
  try {
    sim = await startChild('simulator-process.ts', [JSON.stringify(medium?.knobs ?? {})]);
    const ready = sim.ready as SimulatorReady;
    const result: Record<string, unknown> = {
      date: new Date().toISOString(),
      node: process.version,
      exporterDir: opts.exporterDir,
      exporterArgs: opts.exporterArgs,
    };
    // Each phase gets a fresh exporter: the aftermath of one flood must not count against the next.
    const phases = opts.phase === 'both' ? (['scrapes', 'idle'] as const) : ([opts.phase] as const);
    for (const phase of phases) result[phase] = await runPhase(phase, opts, ready, dir);
    const out = JSON.stringify(result, null, 2);
    console.log(out);
    if (opts.json) writeFileSync(opts.json, `${out}\n`);
  } finally {
    await sim?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runPhase(phase: 'scrapes' | 'idle', opts: Options, ready: SimulatorReady, dir: string): Promise<Record<string, unknown>> {
  const exporter = await startExporter(opts, ready, dir);
  try {
    const port = exporter.port;
    await waitFor('/readyz 200', 180_000, async () => {
      const r = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return r?.status === 200 ? true : undefined;
    });
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
    console.error(JSON.stringify(figures));
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
