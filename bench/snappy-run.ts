/**
 * Compression's share of a remote-write backfill (`npm run bench:compression -- --remote-write`):
 * the backfill command runs as users run it (its own process) over the backfill cell's history (the
 * medium size, 30 days, --step 1h: bench/backfill-run.ts) into a receiver on loopback that keeps
 * every request body and answers 204 at once, so that the wall time is the backfill's own. Then every
 * body, decompressed, is compressed again by the native `snappy` and by the pure-JS `snappyjs` as the
 * exporter loads it (median of --repeats rounds each), each one's time set against the command's. A
 * body compressed by snappyjs is checked to decompress, by the native package, to the same bytes.
 * Every loop is bounded by count.
 */
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { compressSync, uncompressSync } from 'snappy';
import { loadCompression } from '../src/backfill/write-request.js';
import { backfillSetup } from './backfill-run.js';
import { runMain } from './daemon.js';

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

/**
 * The cell: the requests and their protobuf bytes, the command's wall time; per implementation the
 * compressed bytes and the seconds to compress every body (median of the rounds), and the longest
 * single body's compression in ms (what one call holds the event loop).
 */
export async function benchSnappy(opts: { days?: number; step?: string; rounds?: number }, progress: (m: string) => void) {
  const days = opts.days ?? 30;
  const step = opts.step ?? '1h';
  progress(`remote write: simulator with ${days} days of medium history`);
  const { sim, dir, args: common } = await backfillSetup(days, step);
  const bodies: Buffer[] = [];
  const target = await receiver(bodies);
  try {
    progress(`remote write: backfill of ${days} days at --step ${step} into a receiver that answers at once`);
    const run = await runMain([...common, '--out', join(dir, 'out'), '--remote-write.url', `${target.url}/api/v1/write`]);
    if (run.code !== 0) throw new Error(`backfill exited ${String(run.code)}:\n${run.stdout}\n${run.stderr.slice(-4000)}`);
    const raw = bodies.map((b) => uncompressSync(b) as Buffer);
    const rounds = Math.max(1, Math.min(10, opts.rounds ?? 5));
    progress(`compressing ${raw.length} bodies again, ${rounds} rounds each: snappy, snappyjs`);
    const native = time(raw, (b) => compressSync(b), rounds);
    const snappyjs = loadCompression();
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

export function snappyLines(f: Awaited<ReturnType<typeof benchSnappy>>): string[] {
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
