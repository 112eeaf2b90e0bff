/**
 * Compression's share of a remote-write backfill (`npm run bench:compression -- --remote-write`):
 * the backfill command runs as users run it (its own process) over the backfill cell's history (the
 * medium size, 30 days, --step 1h: bench/backfill-run.ts) into a receiver on loopback that keeps
 * every request body and answers 204 at once, so that the wall time is the backfill's own. Then every
 * body, decompressed, is compressed again by the native `snappy` and by the pure-JS `snappyjs`
 * (median of --repeats rounds each), and each one's time is set against the command's wall time. A
 * body compressed by snappyjs is checked to decompress, by the native package, to the same bytes.
 * Every loop is bounded by count.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compressSync, uncompressSync } from 'snappy';
import snappyjs from 'snappyjs';
import { stringify } from 'yaml';
import { startChild } from './children.js';
import { sizeByName } from './sizes.js';
import type { SimulatorReady } from './simulator-process.js';

/** The simulator process's fixed clock (bench/simulator-process.ts): the range ends 3 h before it. */
const SIMULATOR_NOW = Date.parse('2026-11-21T12:00:00Z') / 1000;

export interface SnappyFigures {
  readonly days: number;
  readonly step: string;
  readonly requests: number;
  readonly rawBytes: number;
  readonly wallSeconds: number;
  /** Per implementation: compressed bytes and seconds to compress every body (median of the rounds). */
  readonly native: { readonly bytes: number; readonly seconds: number };
  readonly js: { readonly bytes: number; readonly seconds: number };
  /** The longest single body's compression, in ms (what one call holds the event loop). */
  readonly longestMs: { readonly native: number; readonly js: number };
}

function receiver(bodies: Buffer[]): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url?.startsWith('/api/v1/write')) {
        const body = Buffer.concat(chunks);
        if (body.length > 0) bodies.push(body);
        res.writeHead(204).end();
      } else res.writeHead(404).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

function backfill(args: readonly string[]): Promise<{ code: number | null; seconds: number; output: string }> {
  const t0 = performance.now();
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (c: Buffer) => (output = (output + c.toString('utf8')).slice(-20_000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, seconds: (performance.now() - t0) / 1000, output }));
  });
}

/** Seconds to compress every body with `compress`, median of `rounds`; the compressed bytes; the longest call (ms). */
function time(raw: readonly Buffer[], compress: (b: Buffer) => Uint8Array, rounds: number): { seconds: number; bytes: number; longest: number } {
  const totals: number[] = [];
  let bytes = 0;
  let longest = 0;
  for (let r = 0; r < rounds; r++) {
    let total = 0;
    bytes = 0;
    for (const body of raw) {
      const t0 = performance.now();
      const out = compress(body);
      const ms = performance.now() - t0;
      total += ms;
      longest = Math.max(longest, ms);
      bytes += out.length;
    }
    totals.push(total / 1000);
  }
  totals.sort((a, b) => a - b);
  return { seconds: totals[Math.floor(totals.length / 2)] ?? NaN, bytes, longest };
}

export async function benchSnappy(opts: { days?: number; step?: string; rounds?: number }, progress: (m: string) => void): Promise<SnappyFigures> {
  const days = opts.days ?? 30;
  const step = opts.step ?? '1h';
  const medium = sizeByName('medium');
  if (!medium) throw new Error('no medium size');
  progress(`remote write: simulator with ${days} days of medium history`);
  const sim = await startChild('simulator-process.js', [JSON.stringify({ ...medium.knobs, runsPerConnector: days, jobsPerAction: days }), JSON.stringify({ connectorPeriodSeconds: 86_400, historyDays: days })]);
  const bodies: Buffer[] = [];
  const target = await receiver(bodies);
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-bench-snappy-'));
  try {
    const ready = sim.ready as SimulatorReady;
    const config = join(dir, 'exporter.yaml');
    const stack = { name: 'bench', baseUrl: ready.url, clientId: ready.clientId, secret: ready.secret, rateLimitPerMinute: 6000, backfillRequestsPerMinute: 6000, track: { assets: ready.trackedAssets, users: ready.trackedUsers } };
    writeFileSync(config, stringify({ stacks: [stack] }));
    const to = SIMULATOR_NOW - 3 * 3600;
    const iso = (s: number) => new Date(s * 1000).toISOString();
    progress(`remote write: backfill of ${days} days at --step ${step} into a receiver that answers at once`);
    const args = ['backfill', '--config', config, '--from', iso(to - days * 86_400), '--to', iso(to), '--step', step, '--instance', 'bench:9873', '--out', join(dir, 'out'), '--remote-write.url', `${target.url}/api/v1/write`];
    const run = await backfill(args);
    if (run.code !== 0) throw new Error(`backfill exited ${String(run.code)}:\n${run.output}`);
    const raw = bodies.map((b) => uncompressSync(b) as Buffer);
    const rounds = Math.max(1, Math.min(10, opts.rounds ?? 5));
    progress(`compressing ${raw.length} bodies again, ${rounds} rounds each: snappy, snappyjs`);
    const native = time(raw, (b) => compressSync(b), rounds);
    const js = time(raw, (b) => snappyjs.compress(b), rounds);
    for (const body of raw.slice(0, 50)) {
      if (!Buffer.from(uncompressSync(Buffer.from(snappyjs.compress(body))) as Buffer).equals(body)) throw new Error('snappyjs output does not decompress to the same bytes');
    }
    return {
      days,
      step,
      requests: raw.length,
      rawBytes: raw.reduce((n, b) => n + b.length, 0),
      wallSeconds: run.seconds,
      native: { bytes: native.bytes, seconds: native.seconds },
      js: { bytes: js.bytes, seconds: js.seconds },
      longestMs: { native: native.longest, js: js.longest },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await new Promise((resolve) => target.server.close(resolve));
    await sim.stop();
  }
}

const mib = (b: number) => `${(b / 1024 ** 2).toFixed(1)} MiB`;
const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)} %`;

export function snappyLines(f: SnappyFigures): string[] {
  return [
    `Remote-write backfill of ${f.days} days, medium size, --step ${f.step}: ${f.requests} requests, ${mib(f.rawBytes)} of protobuf before compression; the whole command took ${f.wallSeconds.toFixed(1)} s of wall time into a receiver that answers at once.`,
    '',
    '| | snappy (native) | snappyjs (pure JS) |',
    '|---|---:|---:|',
    `| compressing every body (median of the rounds) | ${f.native.seconds.toFixed(2)} s | ${f.js.seconds.toFixed(2)} s |`,
    `| share of the command's wall time | ${pct(f.native.seconds, f.wallSeconds)} | ${pct(f.js.seconds, f.wallSeconds - f.native.seconds + f.js.seconds)} |`,
    `| bytes sent | ${mib(f.native.bytes)} | ${mib(f.js.bytes)} |`,
    `| longest single body | ${f.longestMs.native.toFixed(1)} ms | ${f.longestMs.js.toFixed(1)} ms |`,
  ];
}
