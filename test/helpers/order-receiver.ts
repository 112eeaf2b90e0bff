/**
 * A remote-write receiver on loopback that checks the protocol's one ordering rule as requests come
 * in (remote write 1.0: "senders MUST send samples for any given series in timestamp order … MAY
 * send multiple requests for different series in parallel"). It decodes every WriteRequest at once
 * (snappy, then protobuf with protobufjs against Prometheus' .proto text) and answers it after
 * `answerAfterMs`; meanwhile it counts:
 *
 * - `seriesInFlightTwice`: series of an arriving request that an earlier request still in flight
 *   carries too (each such series of each request counts once);
 * - `olderThanReceived`: samples older than (or as old as) a sample of their series received before;
 * - `overlapping`: requests that arrived while another was in flight (parallel sending);
 * - every sample by series and timestamp, so that a sample sent twice or lost is seen.
 *
 * `status(n, method, url)` may answer a request (n counts every request from 1) with another status
 * (a 503 while "restarting"); such a request is not decoded and counts for nothing but `requests`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeWriteRequest, seriesKey } from './write-request-decode.js';

export interface OrderReceiverOptions {
  readonly answerAfterMs: number;
  /** Another status for request `n` (from 1), or undefined for the normal answer. */
  readonly status?: (n: number, method: string, url: string) => number | undefined;
}

export class OrderReceiver {
  /** Every request, whatever it was and however it was answered. */
  requests = 0;
  /** Write requests decoded (answered 204), the empty probe included. */
  writes = 0;
  seriesInFlightTwice = 0;
  olderThanReceived = 0;
  overlapping = 0;
  maxInFlight = 0;
  /** `labels@timestamp` → times received. */
  readonly samples = new Map<string, number>();
  /** Statuses answered, in order. */
  readonly answered: number[] = [];
  private readonly inFlight = new Map<string, number>();
  private readonly newest = new Map<string, number>();
  private requestsInFlight = 0;
  private server: Server | undefined;
  url = '';

  constructor(private readonly opts: OrderReceiverOptions) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        if (!res.headersSent) res.writeHead(500).end(`receiver: ${(e as Error).message}`);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Samples received more than once. */
  duplicates(): string[] {
    return [...this.samples].filter(([, n]) => n > 1).map(([k]) => k);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const n = ++this.requests;
    const other = this.opts.status?.(n, req.method ?? '', req.url ?? '');
    if (other !== undefined) {
      this.answered.push(other);
      res.writeHead(other, { 'Content-Type': 'text/plain' }).end(`status ${other}`);
      return;
    }
    if (req.method !== 'POST' || req.url !== '/api/v1/write') {
      this.answered.push(404);
      res.writeHead(404).end('not found');
      return;
    }
    const decoded = decodeWriteRequest(Buffer.concat(chunks));
    const series = new Set<string>();
    for (const ts of decoded.timeseries ?? []) {
      const key = seriesKey(ts.labels);
      if (!series.has(key) && (this.inFlight.get(key) ?? 0) > 0) this.seriesInFlightTwice += 1;
      series.add(key);
      for (const s of ts.samples) {
        const newest = this.newest.get(key);
        if (newest !== undefined && s.timestamp <= newest) this.olderThanReceived += 1;
        else this.newest.set(key, s.timestamp);
        const id = `${key}@${s.timestamp}`;
        this.samples.set(id, (this.samples.get(id) ?? 0) + 1);
      }
    }
    if (this.requestsInFlight > 0) this.overlapping += 1;
    this.requestsInFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.requestsInFlight);
    for (const key of series) this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    this.writes += 1;
    await new Promise((resolve) => setTimeout(resolve, this.opts.answerAfterMs));
    for (const key of series) this.inFlight.set(key, (this.inFlight.get(key) ?? 1) - 1);
    this.requestsInFlight -= 1;
    this.answered.push(204);
    res.writeHead(204).end();
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}
