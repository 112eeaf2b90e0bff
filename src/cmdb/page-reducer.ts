/**
 * One page of the connector run history, parsed and reduced off the event loop.
 *
 * A real page is up to ~25 MB (2,000 rows); JSON.parse of that holds the loop for hundreds of
 * milliseconds and the parsed rows take several times the text in heap. So the text goes to a worker
 * thread, which parses it and sends back only the newest row per (bridge_name, profile name) of that
 * page, plus what the incremental reader needs (was the page sorted by `_time` descending, its
 * oldest `_time`). The main thread then validates the few kept rows with the endpoint's schema.
 * Measured in bench/ (docs/performance.md): see the connector-history cell.
 *
 * Rows the worker cannot classify with certainty (no numeric `_time`, an odd bridge_name or
 * profile) are passed through untouched, so the exact ordering (`runTime`) and the schema still
 * decide about them on the main thread.
 */
import { Worker } from 'node:worker_threads';

export interface PageTimes {
  /** Every row has a numeric `_time` and they never increase down the page. */
  readonly sorted: boolean;
  /** `_time` of the first and last row, and the smallest (seconds); absent on an empty page. */
  readonly first?: number;
  readonly last?: number;
  readonly min?: number;
}

export type ReducedPage =
  /** A page object with `content`: the kept rows, and the page's other keys as sent. */
  | ({ readonly kind: 'page'; readonly rows: unknown[]; readonly count: number; readonly envelope: Record<string, unknown> } & PageTimes)
  /** Any other JSON body (a bare list, a `data` envelope): left whole for the schema to judge. */
  | { readonly kind: 'other'; readonly body: unknown }
  | { readonly kind: 'not_json' };

/**
 * The reduction itself. It runs in the worker from its source text (Function#toString), so it
 * must stay self-contained: no imports, no names from outside its own body.
 */
export function reduceConnectorPage(text: string): ReducedPage {
  let body: unknown;
  try {
    body = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return { kind: 'not_json' };
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { kind: 'other', body };
  const page = body as Record<string, unknown>;
  const content = page.content;
  if (!Array.isArray(content)) return { kind: 'other', body };
  const newest = new Map<string, { row: unknown; time: number; index: number }>();
  const loose: Array<{ row: unknown; index: number }> = [];
  let sorted = true;
  let first: number | undefined;
  let last: number | undefined;
  let min: number | undefined;
  for (let index = 0; index < content.length; index++) {
    const row = content[index] as Record<string, unknown> | null;
    const raw = row !== null && typeof row === 'object' ? row._time : undefined;
    // Same reading as parseTimestamp for numbers: above 1e11 it is milliseconds.
    const time = typeof raw === 'number' && Number.isFinite(raw) && raw > 0 ? (raw > 1e11 ? raw / 1000 : raw) : undefined;
    if (time === undefined || row === null) {
      sorted = false;
      loose.push({ row, index });
      continue;
    }
    if (last !== undefined && time > last) sorted = false;
    if (first === undefined) first = time;
    last = time;
    if (min === undefined || time < min) min = time;
    const p = row.profile;
    let profile: string | undefined;
    if (typeof p === 'string') profile = p;
    else if (p === null || p === undefined) profile = '';
    else if (typeof p === 'object' && !Array.isArray(p) && typeof (p as Record<string, unknown>).profile_name === 'string') {
      profile = (p as Record<string, unknown>).profile_name as string;
    }
    if (typeof row.bridge_name !== 'string' || profile === undefined) {
      loose.push({ row, index });
      continue;
    }
    const key = `${row.bridge_name}\u0000${profile}`;
    const best = newest.get(key);
    if (!best || time >= best.time) newest.set(key, { row, time, index });
  }
  const kept: Array<{ row: unknown; index: number }> = loose;
  for (const v of newest.values()) kept.push(v);
  // Page order, so that ties still go to the later row when the main thread reduces again.
  kept.sort((a, b) => a.index - b.index);
  const envelope: Record<string, unknown> = {};
  for (const k of Object.keys(page)) if (k !== 'content') envelope[k] = page[k];
  return { kind: 'page', rows: kept.map((k) => k.row), count: content.length, envelope, sorted, first, last, min };
}

const WORKER_SOURCE = `'use strict';
// Bundlers may wrap functions in __name(); the reduction runs here without them.
var __name = function (f) { return f; };
const reduce = ${reduceConnectorPage.toString()};
const { parentPort } = require('node:worker_threads');
parentPort.on('message', function (m) {
  let result;
  try {
    result = reduce(Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength).toString('utf8'));
  } catch (err) {
    result = { kind: 'failed', message: String((err && err.message) || err).slice(0, 200) };
  }
  parentPort.postMessage({ id: m.id, result });
});
`;

type WorkerAnswer = { id: number; result: ReducedPage | { kind: 'failed'; message: string } };

/**
 * Runs reduceConnectorPage in one shared worker thread; bodies below `inlineBelowBytes` are reduced
 * on the calling thread (the hop costs more than it saves). If a worker cannot be started, every
 * body is reduced inline.
 */
export class PageReducer {
  private worker: Worker | undefined;
  private workerBroken = false;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: ReducedPage) => void; reject: (e: Error) => void }>();

  constructor(private readonly inlineBelowBytes = 1024 * 1024) {}

  reduce(body: Buffer): Promise<ReducedPage> {
    if (body.length < this.inlineBelowBytes || this.workerBroken) return Promise.resolve(reduceConnectorPage(body.toString('utf8')));
    const worker = this.start();
    if (!worker) return Promise.resolve(reduceConnectorPage(body.toString('utf8')));
    const id = this.nextId++;
    return new Promise<ReducedPage>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Hand the bytes over without a copy when the buffer owns its whole memory.
      const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
      const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
      worker.postMessage({ id, bytes }, whole ? [body.buffer as ArrayBuffer] : []);
      if (this.pending.size === 1) worker.ref();
    });
  }

  /** Stops the worker; later calls start a new one. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  private start(): Worker | undefined {
    if (this.worker) return this.worker;
    let worker: Worker;
    try {
      // Without the loader flags of the parent (tsx, test runners): the source is plain JavaScript.
      worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [] });
    } catch {
      this.workerBroken = true;
      return undefined;
    }
    worker.unref();
    worker.on('message', (m: WorkerAnswer) => {
      const waiter = this.pending.get(m.id);
      if (!waiter) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) worker.unref();
      if (m.result.kind === 'failed') waiter.reject(new Error(`page reduction failed: ${m.result.message}`));
      else waiter.resolve(m.result);
    });
    const fail = (err: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiter of this.pending.values()) waiter.reject(err);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`page worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}

let shared: PageReducer | undefined;

/** The process-wide reducer: one worker thread serves every stack (pages are read one at a time per stack). */
export function sharedPageReducer(): PageReducer {
  shared ??= new PageReducer();
  return shared;
}
