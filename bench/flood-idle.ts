/**
 * The idle phase of `npm run bench:flood` (bench/flood.ts): idle connections held open against the
 * exporter by worker processes (this file, forked with --idle-worker) while it keeps polling the
 * simulator; a scrape every 5 s meanwhile, and the upstream requests by outcome, the advance of the
 * ingestion endpoint's last success and EMFILE lines in its log compared before and after.
 */
import { fork } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Daemon } from './daemon.js';
import { residentBytes } from './proc.js';

export type Exporter = Daemon & { readonly port: number };

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
async function probeScrape(port: number) {
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

/** Holds `opts.idle` idle connections to the exporter (across worker processes) for the hold time, while probing it. */
export async function idleFlood(opts: { readonly idle: number; readonly idleWorkers: number; readonly holdSeconds: number }, exporter: Exporter) {
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === '--idle-worker') {
  await idleWorker(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]));
  process.exit(0);
}
