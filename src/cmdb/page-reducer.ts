/**
 * The connector history's pages, parsed and reduced off the event loop: a real page is up to ~25 MB
 * (2,000 rows), whose JSON.parse holds the loop for hundreds of milliseconds. A worker thread keeps,
 * across the pages of one scan, the newest row per key, and answers per page what the reader needs
 * (scan-reducers.ts); the kept rows come back once, to be validated on the main thread.
 * Measured in bench/ (docs/performance.md): see the connector-history cell.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createScanReducers, type KnownTimes, type PageAnswer, type ScanReducers } from './scan-reducers.js';

export { createScanReducers, type KnownTimes, type PageAnswer, type PageTimes, type ScanReducers } from './scan-reducers.js';

/** One page on its own: its answer and the rows it keeps (tests, and bodies read outside a scan). */
export function reduceConnectorPage(text: string): PageAnswer & { readonly rows?: unknown[] } {
  const reducers = createScanReducers();
  const answer = reducers.page(0, text);
  return answer.kind === 'page' ? { ...answer, rows: reducers.finish(0) } : answer;
}

type WorkerAnswer = { id: number; result?: unknown; failed?: string };
/** What the worker is asked (page-worker.ts). */
export type WorkerRequest =
  | { op: 'begin'; scan: number; known: KnownTimes }
  | { op: 'page'; scan: number; bytes: Uint8Array }
  | { op: 'finish' | 'peek' | 'drop'; scan: number };

/**
 * The worker module next to this one: page-worker.js when running from the build (dist/); from
 * src/ (tests, npm run demo under tsx) its TypeScript source, loaded through tsx's loader, which
 * the worker registers before it imports the module.
 */
function startWorker(): Worker {
  const built = new URL('./page-worker.js', import.meta.url);
  // Not the parent's flags (test runners add their own): only what the module itself needs.
  if (existsSync(fileURLToPath(built))) return new Worker(built, { execArgv: [] });
  const source = new URL('./page-worker.ts', import.meta.url).href;
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { (m.register ?? m.default.register)(); return import(${JSON.stringify(source)}); });`;
  return new Worker(boot, { eval: true, execArgv: [] });
}

/**
 * The pages of one scan, reduced in the reducer's worker thread, or on the calling thread when the
 * first page is small (the hop costs more than it saves) or no worker can be started. Every page
 * of a scan goes to the same place, because that is where its kept rows are.
 */
export class ScanSession {
  private where: 'worker' | 'inline' | undefined;

  constructor(
    private readonly owner: PageReducer,
    private readonly id: number,
    private readonly known: KnownTimes = [],
  ) {}

  async page(body: Buffer): Promise<PageAnswer> {
    if (this.where === undefined) {
      this.where = body.length >= this.owner.inlineBelowBytes && this.owner.workerAvailable() ? 'worker' : 'inline';
      if (this.where === 'inline') this.owner.inline.begin(this.id, this.known);
      // Not awaited: the worker takes messages in order, and the pages of the scan must follow it at once.
      else this.owner.call({ op: 'begin', scan: this.id, known: this.known }).catch(() => undefined);
    }
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

  /** The rows kept so far (those of every page handed in before), the scan going on. */
  async peek(): Promise<unknown[]> {
    if (this.where === 'worker') return (await this.owner.call({ op: 'peek', scan: this.id })) as unknown[];
    if (this.where === 'inline') return this.owner.inline.peek(this.id);
    return [];
  }

  drop(): void {
    if (this.where === 'worker') this.owner.call({ op: 'drop', scan: this.id }).catch(() => undefined);
    else this.owner.inline.drop(this.id);
  }
}

/** One worker thread for the scans of its owner (a stack's client); scans are told apart by their id. */
export class PageReducer {
  readonly inline: ScanReducers = createScanReducers();
  private worker: Worker | undefined;
  private workerBroken = false;
  private nextId = 1;
  private nextScan = 1;
  private readonly pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();

  constructor(readonly inlineBelowBytes = 1024 * 1024) {}

  /** A new scan; rows no newer than `known` (per runKey) are not counted as new on its pages. */
  beginScan(known: KnownTimes = []): ScanSession {
    return new ScanSession(this, this.nextScan++, known);
  }

  workerAvailable(): boolean {
    return this.start() !== undefined;
  }

  call(request: WorkerRequest, transfer: ArrayBuffer[] = []): Promise<unknown> {
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
      worker = startWorker();
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
