/**
 * A loopback proxy in front of a remote-write receiver that sees what a backfill sends: it decodes
 * every WriteRequest (snappy, then protobuf with protobufjs against Prometheus' .proto text) and
 * counts each sample by series and timestamp, so a sample sent twice is seen whatever the receiver
 * does with it; and it can hold the write requests from some point on until told to let them
 * through (a backfill stopped while a batch is in flight). Everything else is passed through as is.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeWriteRequest, seriesKey } from '../../helpers/write-request-decode.js';

export class WriteProxy {
  /** `labels@timestamp` → times it was passed on. */
  readonly samples = new Map<string, number>();
  writes = 0;
  private holdFrom = Number.POSITIVE_INFINITY;
  private readonly held: Array<() => void> = [];
  private readonly heldWaiters = new Set<() => void>();
  private server: Server | undefined;
  url = '';

  constructor(private readonly target: string) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) =>
      this.handle(req, res).catch((e: unknown) => {
        if (!res.headersSent) res.writeHead(502).end(`proxy: ${(e as Error).message}`);
      }),
    );
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Holds every write request after the first `n` passed on (counted from now). */
  holdAfter(n: number): void {
    this.holdFrom = this.writes + n;
  }

  get holding(): number {
    return this.held.length;
  }

  /** Resolves once a write request is held. */
  waitHeld(): Promise<void> {
    return new Promise((resolve) => {
      if (this.held.length > 0) return resolve();
      this.heldWaiters.add(resolve);
    });
  }

  /** Lets the held requests through and holds no more. */
  release(): void {
    this.holdFrom = Number.POSITIVE_INFINITY;
    for (const go of this.held.splice(0)) go();
  }

  /** Samples passed on more than once. */
  duplicates(): string[] {
    return [...this.samples].filter(([, n]) => n > 1).map(([k]) => k);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const isWrite = req.method === 'POST' && req.url === '/api/v1/write' && body.length > 0;
    if (isWrite && this.writes >= this.holdFrom) {
      await new Promise<void>((go) => {
        this.held.push(go);
        for (const w of this.heldWaiters) w();
        this.heldWaiters.clear();
      });
    }
    const headers: Record<string, string> = {};
    for (const h of ['content-type', 'content-encoding', 'x-prometheus-remote-write-version', 'user-agent']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const r = await fetch(`${this.target}${req.url}`, { method: req.method, headers, ...(req.method === 'POST' ? { body } : {}) });
    const answer = Buffer.from(await r.arrayBuffer());
    if (isWrite && r.status < 300) {
      this.writes += 1;
      const decoded = decodeWriteRequest(body);
      for (const ts of decoded.timeseries ?? []) {
        const key = seriesKey(ts.labels);
        for (const s of ts.samples) {
          const id = `${key}@${s.timestamp}`;
          this.samples.set(id, (this.samples.get(id) ?? 0) + 1);
        }
      }
    }
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'text/plain' }).end(answer);
  }

  async close(): Promise<void> {
    this.release();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
