/**
 * /metrics against the physical limit: the exporter and a bare node:http server (bench/bare-server.ts)
 * serving the very bytes the exporter served, plain and pre-gzipped, under the same closed-loop load
 * of keep-alive connections, alternately, in rounds. CPU per request and RSS are read from /proc by
 * this process, so they include socket writes and zlib's threads and cost the measured process nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { startChild } from './children.js';
import { cpuMs, residentBytes, sampleRss } from './proc.js';
import type { CompareCell, CompareFigures, CompareSettings, Encoding } from './results.js';
import { scrapeLoad } from './scrape-load.js';

interface Target {
  readonly name: 'exporter' | 'bare';
  readonly url: string;
  readonly pid: number;
}

/** The Accept header of each format beyond the text format: what Prometheus sends by default. */
export const FORMAT_ACCEPT = {
  openmetrics: 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
} as const;
export type BenchFormat = keyof typeof FORMAT_ACCEPT;

/** The body of GET `url` as it travels (gzip when asked; in the format `accept` names); throws unless 200. */
export async function saved(url: string, gzip = false, accept?: string): Promise<Buffer> {
  const res = await request(url, { headers: { ...(gzip ? { 'accept-encoding': 'gzip' } : {}), ...(accept ? { accept } : {}) } });
  if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode}`);
  return Buffer.from(await res.body.arrayBuffer());
}

/** A bare server (bench/bare-server.ts, a process of its own) serving `plain` and `zipped` while `use` runs. */
export async function withBareServer<T>(plain: Buffer, zipped: Buffer, use: (bare: { url: string; pid: number }) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-bench-'));
  writeFileSync(join(dir, 'metrics.txt'), plain);
  writeFileSync(join(dir, 'metrics.txt.gz'), zipped);
  const bare = await startChild('bare-server.ts', [join(dir, 'metrics.txt'), join(dir, 'metrics.txt.gz')]);
  try {
    return await use(bare.ready as { url: string; pid: number });
  } finally {
    await bare.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function cell(target: Target, encoding: Encoding, round: number, settings: CompareSettings, accept: string | undefined): Promise<CompareCell> {
  const rss = sampleRss(target.pid);
  const cpu0 = await cpuMs(target.pid);
  const load = await scrapeLoad({ url: target.url, clients: settings.clients, gzip: encoding === 'gzip', ...(accept ? { accept } : {}), maxRequests: settings.maxRequests, maxMs: settings.seconds * 1000 });
  const cpu = (await cpuMs(target.pid)) - cpu0;
  return {
    target: target.name,
    encoding,
    round,
    requests: load.requests,
    errors: load.errors,
    seconds: load.seconds,
    perSecond: load.perSecond,
    latency: load.latency,
    responseBytes: load.responseBytes,
    cpuMsPerRequest: load.requests > 0 ? cpu / load.requests : Number.NaN,
    maxRssBytes: await rss.stop(),
  };
}

export async function compareWithBare(
  exporter: { url: string; pid: number },
  settings: CompareSettings,
  progress: (message: string) => void,
  /** A format other than the text format: the bare server serves that format's bytes, the load asks for it. */
  format?: BenchFormat,
): Promise<CompareFigures> {
  const accept = format && FORMAT_ACCEPT[format];
  const plain = await saved(`${exporter.url}/metrics`, false, accept);
  const zipped = await saved(`${exporter.url}/metrics`, true, accept);
  return withBareServer(plain, zipped, async (ready) => {
    const targets: Target[] = [
      { name: 'exporter', url: exporter.url, pid: exporter.pid },
      { name: 'bare', url: ready.url, pid: ready.pid },
    ];
    const idleSampler = sampleRss(exporter.pid);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const idle = await idleSampler.stop();
    const cells: CompareCell[] = [];
    for (const encoding of ['identity', 'gzip'] as const) {
      for (let round = 1; round <= settings.rounds; round++) {
        // Alternate who goes first, so that a drift of the machine's load favours neither.
        const order = round % 2 === 1 ? targets : [...targets].reverse();
        for (const target of order) {
          progress(`compare${format ? ` ${format}` : ''}: ${encoding}, round ${round}, ${target.name}`);
          cells.push(await cell(target, encoding, round, settings, accept));
        }
      }
    }
    const peak = await residentBytes(exporter.pid);
    return { plainBytes: plain.length, gzipBytes: zipped.length, idleRssBytes: idle, peakRssBytes: peak?.hwm ?? Number.NaN, cells };
  });
}

/** The cells of one target and encoding, every round. */
export function cellsOf(f: CompareFigures, target: CompareCell['target'], encoding: Encoding): CompareCell[] {
  return f.cells.filter((c) => c.target === target && c.encoding === encoding);
}

/** The figures of one target over every round: requests / time, the worst round's p99, mean CPU per request. */
export function pooled(cells: readonly CompareCell[]) {
  const requests = cells.reduce((n, c) => n + c.requests, 0);
  const seconds = cells.reduce((n, c) => n + c.seconds, 0);
  const cpu = cells.reduce((n, c) => n + c.cpuMsPerRequest * c.requests, 0);
  return {
    requests,
    perSecond: seconds > 0 ? requests / seconds : Number.NaN,
    p99: Math.max(...cells.map((c) => c.latency.p99)),
    cpuPerRequest: cpu / requests,
  };
}

/** The exporter's requests a second over the bare server's, all rounds pooled. */
export function ratio(f: CompareFigures, encoding: Encoding): number {
  return pooled(cellsOf(f, 'exporter', encoding)).perSecond / pooled(cellsOf(f, 'bare', encoding)).perSecond;
}

/** Largest VmRSS of the exporter while the clients scraped it. */
export function loadedRss(f: CompareFigures): number {
  return Math.max(...f.cells.filter((c) => c.target === 'exporter').map((c) => c.maxRssBytes));
}

/** Largest VmRSS of the exporter while the clients scraped it, over its idle VmRSS. */
export function rssGrowth(f: CompareFigures): number {
  return loadedRss(f) / f.idleRssBytes;
}
