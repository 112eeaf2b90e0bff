/**
 * Load on /metrics over HTTP with keep-alive: `clients` connections, each sending its next request
 * when the previous answer has been read in full, until the request count or the time is used up.
 * Runs in the benchmark process, not in the exporter's.
 */
import { Pool } from 'undici';
import { watchStalls, type Stall } from './loop-delay.js';
import { distribution } from './stats.js';

export interface ScrapeLoad {
  readonly url: string;
  readonly clients: number;
  readonly gzip: boolean;
  /** The Accept header (the format asked for); none: the text format. */
  readonly accept?: string;
  readonly maxRequests: number;
  readonly maxMs: number;
  /** Also keep when each scrape slower than this began (ms since the epoch) and how long it took. */
  readonly slowerThanMs?: number;
}

const WARM_UP_REQUESTS = 3;

/** The cell's figures (latency in ms); with slowerThanMs, the slow scrapes and this process's own stalls meanwhile. */
export async function scrapeLoad(load: ScrapeLoad) {
  const target = new URL(load.url);
  const origin = target.origin;
  // A URL with a path or query is scraped as given (/metrics?stack=NAME); a bare origin at /metrics.
  const path = target.pathname === '/' && target.search === '' ? '/metrics' : `${target.pathname}${target.search}`;
  const pool = new Pool(origin, { connections: load.clients, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers: Record<string, string> = { ...(load.gzip ? { 'accept-encoding': 'gzip' } : {}), ...(load.accept ? { accept: load.accept } : {}) };
  const scrape = async () => {
    const res = await pool.request({ path, method: 'GET', headers });
    // undici does not decompress: this is what travels over the wire.
    const body = await res.body.arrayBuffer();
    return { status: res.statusCode, bytes: body.byteLength };
  };
  try {
    let responseBytes = 0;
    for (let i = 0; i < WARM_UP_REQUESTS; i++) responseBytes = (await scrape()).bytes;

    const latencies: number[] = [];
    const slow: Stall[] = [];
    // Only when slow scrapes are asked for: a scrape can also be slow because this process waited.
    const client = load.slowerThanMs === undefined ? undefined : watchStalls();
    let sent = 0;
    let errors = 0;
    const started = performance.now();
    const deadline = started + load.maxMs;
    const scraper = async () => {
      while (sent < load.maxRequests && performance.now() < deadline) {
        sent++;
        const t0 = performance.now();
        const at = Date.now();
        const { status } = await scrape();
        const ms = performance.now() - t0;
        latencies.push(ms);
        if (load.slowerThanMs !== undefined && ms > load.slowerThanMs) slow.push({ at, ms });
        if (status !== 200) errors++;
      }
    };
    await Promise.all(Array.from({ length: load.clients }, scraper));
    const clientStalls: Stall[] = client?.stop() ?? [];
    const seconds = (performance.now() - started) / 1000;
    return {
      clients: load.clients,
      gzip: load.gzip,
      requests: latencies.length,
      errors,
      seconds,
      perSecond: latencies.length / seconds,
      latency: distribution(latencies),
      responseBytes,
      slow,
      clientStalls,
    };
  } finally {
    await pool.close();
  }
}
