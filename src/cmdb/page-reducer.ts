/**
 * One page of the connector run history, parsed and reduced off the event loop.
 *
 * A real page is up to ~25 MB (2,000 rows); JSON.parse of that holds the loop for hundreds of
 * milliseconds and the parsed rows take several times the text in heap. So the text goes to a worker
 * thread, which parses it and keeps, across all pages of one scan, only the newest row per
 * (bridge_name, profile name); per page it answers only what the incremental reader needs (was the
 * page sorted by `_time` descending, its oldest `_time`). When the scan ends, the kept rows (one
 * per key) come back once and the main thread validates them with the endpoint's schema.
 * Measured in bench/ (docs/performance.md): see the connector-history cell.
 */
import { Worker } from 'node:worker_threads';
import { capDepth } from '../api/depth.js';

export interface PageTimes {
  /** Every row has a numeric `_time` and they never increase down the page. */
  readonly sorted: boolean;
  /** `_time` of the first and last row, and the smallest (seconds); absent on an empty page. */
  readonly first?: number;
  readonly last?: number;
  readonly min?: number;
}

/** What reading one page says; its rows stay with the scan until it finishes. */
export type PageAnswer =
  /** A page object with `content`: its row count, sort facts, and its other keys as sent. */
  | ({ readonly kind: 'page'; readonly count: number; readonly envelope: Record<string, unknown> } & PageTimes)
  /** Any other JSON body (a bare list, a `data` envelope): left whole for the schema to judge. */
  | { readonly kind: 'other'; readonly body: unknown }
  | { readonly kind: 'not_json' };

export interface ScanReducers {
  /** Parses one page of scan `scan` and keeps its newest row per key with what the scan holds. */
  page(scan: number, text: string): PageAnswer;
  /** The rows the scan kept, in the order they were read; the scan is forgotten. */
  finish(scan: number): unknown[];
  drop(scan: number): void;
}

/**
 * The reduction itself. It runs in the worker from its source text (Function#toString), so it
 * must stay self-contained: no imports, no names from outside its own body (`cap`, which bounds the
 * nesting of what is handed back, is passed in: see src/api/depth.ts).
 *
 * Across the pages of one scan it keeps, per (bridge_name, profile name), the row with the
 * greatest numeric `_time` (ties: the later row). Rows it cannot order with certainty (no numeric
 * `_time`, an odd bridge_name or profile) are all kept, so the exact ordering (`runTime`) and the
 * schema still decide about them on the main thread.
 */
export function createScanReducers(cap: <T>(value: T) => T = capDepth): ScanReducers {
  interface Kept {
    row: unknown;
    time: number;
    order: number;
  }
  const scans = new Map<number, { newest: Map<string, Kept>; loose: Kept[]; order: number }>();
  return {
    page(scan: number, text: string): PageAnswer {
      let body: unknown;
      try {
        body = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
      } catch {
        return { kind: 'not_json' };
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return { kind: 'other', body: cap(body) };
      const page = body as Record<string, unknown>;
      const content = page.content;
      if (!Array.isArray(content)) return { kind: 'other', body: cap(body) };
      let state = scans.get(scan);
      if (!state) {
        state = { newest: new Map(), loose: [], order: 0 };
        scans.set(scan, state);
      }
      let sorted = true;
      let first: number | undefined;
      let last: number | undefined;
      let min: number | undefined;
      for (const item of content) {
        const order = state.order++;
        const row = item as Record<string, unknown> | null;
        const raw = row !== null && typeof row === 'object' ? row._time : undefined;
        // Same reading as parseTimestamp for numbers: above 1e11 it is milliseconds.
        const time = typeof raw === 'number' && Number.isFinite(raw) && raw > 0 ? (raw > 1e11 ? raw / 1000 : raw) : undefined;
        if (time === undefined || row === null) {
          sorted = false;
          state.loose.push({ row, time: -Infinity, order });
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
          state.loose.push({ row, time, order });
          continue;
        }
        const key = `${row.bridge_name}\u0000${profile}`;
        const best = state.newest.get(key);
        if (!best || time >= best.time) state.newest.set(key, { row, time, order });
      }
      const envelope: Record<string, unknown> = {};
      for (const k of Object.keys(page)) if (k !== 'content') envelope[k] = cap(page[k]);
      return { kind: 'page', count: content.length, envelope, sorted, first, last, min };
    },
    finish(scan: number): unknown[] {
      const state = scans.get(scan);
      scans.delete(scan);
      if (!state) return [];
      const kept = state.loose.slice();
      for (const v of state.newest.values()) kept.push(v);
      // Read order, so that ties still go to the later row when the main thread reduces again.
      kept.sort((a, b) => a.order - b.order);
      return kept.map((k) => cap(k.row));
    },
    drop(scan: number): void {
      scans.delete(scan);
    },
  };
}

/** One page on its own: its answer and the rows it keeps (tests, and bodies read outside a scan). */
export function reduceConnectorPage(text: string): PageAnswer & { readonly rows?: unknown[] } {
  const reducers = createScanReducers();
  const answer = reducers.page(0, text);
  return answer.kind === 'page' ? { ...answer, rows: reducers.finish(0) } : answer;
}

const WORKER_SOURCE = `'use strict';
// Bundlers may wrap functions in __name(); the reduction runs here without them.
var __name = function (f) { return f; };
const reducers = (${createScanReducers.toString()})(${capDepth.toString()});
const { parentPort } = require('node:worker_threads');
parentPort.on('message', function (m) {
  let result;
  try {
    if (m.op === 'page') result = reducers.page(m.scan, Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength).toString('utf8'));
    else if (m.op === 'finish') result = reducers.finish(m.scan);
    else result = reducers.drop(m.scan);
  } catch (err) {
    parentPort.postMessage({ id: m.id, failed: String((err && err.message) || err).slice(0, 200) });
    return;
  }
  parentPort.postMessage({ id: m.id, result });
});
`;

type WorkerAnswer = { id: number; result?: unknown; failed?: string };
type Request = { op: 'page'; scan: number; bytes: Uint8Array } | { op: 'finish' | 'drop'; scan: number };

/**
 * The pages of one scan, reduced in the shared worker thread, or on the calling thread when the
 * first page is small (the hop costs more than it saves) or no worker can be started. Every page
 * of a scan goes to the same place, because that is where its kept rows are.
 */
export class ScanSession {
  private where: 'worker' | 'inline' | undefined;

  constructor(
    private readonly owner: PageReducer,
    private readonly id: number,
  ) {}

  async page(body: Buffer): Promise<PageAnswer> {
    this.where ??= body.length >= this.owner.inlineBelowBytes && this.owner.workerAvailable() ? 'worker' : 'inline';
    if (this.where === 'inline') return this.owner.inline.page(this.id, body.toString('utf8'));
    // Hand the bytes over without a copy when the buffer owns its whole memory.
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
    const bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    return (await this.owner.call({ op: 'page', scan: this.id, bytes }, whole ? [body.buffer as ArrayBuffer] : [])) as PageAnswer;
  }

  async finish(): Promise<unknown[]> {
    if (this.where === 'worker') return (await this.owner.call({ op: 'finish', scan: this.id })) as unknown[];
    return this.owner.inline.finish(this.id);
  }

  drop(): void {
    if (this.where === 'worker') this.owner.call({ op: 'drop', scan: this.id }).catch(() => undefined);
    else this.owner.inline.drop(this.id);
  }
}

/** One worker thread shared by every stack; scans are told apart by their id. */
export class PageReducer {
  readonly inline = createScanReducers();
  private worker: Worker | undefined;
  private workerBroken = false;
  private nextId = 1;
  private nextScan = 1;
  private readonly pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();

  constructor(readonly inlineBelowBytes = 1024 * 1024) {}

  beginScan(): ScanSession {
    return new ScanSession(this, this.nextScan++);
  }

  workerAvailable(): boolean {
    return this.start() !== undefined;
  }

  call(request: Request, transfer: ArrayBuffer[] = []): Promise<unknown> {
    const worker = this.start();
    if (!worker) return Promise.reject(new Error('page worker unavailable'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...request }, transfer);
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
    if (this.worker || this.workerBroken) return this.worker;
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
      if (m.failed !== undefined) waiter.reject(new Error(`page reduction failed: ${m.failed}`));
      else waiter.resolve(m.result);
    });
    const fail = (err: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiter of this.pending.values()) waiter.reject(err);
      this.pending.clear();
    };
    worker.on('error', fail);
    // A reply that cannot be cloned back would otherwise leave its caller waiting for ever.
    worker.on('messageerror', (err) => {
      fail(err);
      void worker.terminate();
    });
    worker.on('exit', (code) => fail(new Error(`page worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}

let shared: PageReducer | undefined;

/** The process-wide reducer: one worker thread serves every stack. */
export function sharedPageReducer(): PageReducer {
  shared ??= new PageReducer();
  return shared;
}
