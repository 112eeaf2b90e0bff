/** Replies as plain data, so fault injection can alter them before they are written. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import type { Compression } from './api.js';

export interface Reply {
  status: number;
  /** Exact bytes to send (already serialized). */
  body: string;
  headers?: Record<string, string>;
  /** Send in this Content-Encoding whatever the request accepts (a fault's contentEncoding). */
  encoding?: string;
}

export function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return { status, body: JSON.stringify(value), ...(headers ? { headers } : {}) };
}

/** The small JSON error body of the CMDB: `{"code":…,"message":…}`. */
export function errorReply(status: number, message: string, code: number = status): Reply {
  return json(status, { code, message });
}

/** Writes the reply; returns the body's length in bytes. */
export function send(res: ServerResponse, reply: Reply): number {
  const body = Buffer.from(reply.body, 'utf8');
  res.writeHead(reply.status, {
    'Content-Type': 'application/json',
    'Content-Length': String(body.length),
    ...reply.headers,
  });
  res.end(body);
  return body.length;
}

/** Bodies shorter than this go out plain (as nginx's gzip_min_length). */
const MIN_COMPRESS_BYTES = 20;

/** True when Accept-Encoding takes gzip (by name or `*`, with a q above 0). */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  let gzip: boolean | undefined;
  let star = false;
  for (const part of value.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const ok = q === undefined || Number(q.slice(2)) > 0;
    if (name.trim() === 'gzip' || name.trim() === 'x-gzip') gzip = ok;
    else if (name.trim() === '*') star = ok;
  }
  return gzip ?? star;
}

/** The Content-Encoding of an answer: the reply's own, else gzip when compression is on and the client takes it. */
export function codingFor(reply: Reply, compression: Compression, acceptEncoding: string | string[] | undefined): string | undefined {
  if (reply.encoding !== undefined) return reply.encoding;
  if (compression === 'off' || Buffer.byteLength(reply.body) < MIN_COMPRESS_BYTES || !acceptsGzip(acceptEncoding)) return undefined;
  return 'gzip';
}

/** Encoders of the codings the simulator can produce; any other name is sent as a label only. */
export const ENCODERS: Readonly<Record<string, () => zlib.Gzip | zlib.Deflate | zlib.BrotliCompress>> = {
  gzip: () => zlib.createGzip(),
  deflate: () => zlib.createDeflate(),
  br: () => zlib.createBrotliCompress(),
};

const ENCODE: Readonly<Record<string, (b: Buffer) => Promise<Buffer>>> = {
  gzip: promisify(zlib.gzip),
  deflate: promisify(zlib.deflate),
  br: promisify(zlib.brotliCompress),
};

/**
 * Writes the reply in `coding` (undefined: as send() does): encoded whole with a Content-Length, or
 * streamed through the encoder without one (`chunked`). Returns the bytes that went on the wire.
 */
export async function sendEncoded(res: ServerResponse, reply: Reply, coding: string | undefined, chunked: boolean): Promise<number> {
  if (coding === undefined) return send(res, reply);
  const body = Buffer.from(reply.body, 'utf8');
  const headers = { 'Content-Type': 'application/json', 'Content-Encoding': coding, Vary: 'Accept-Encoding', ...reply.headers };
  const encoder = ENCODERS[coding];
  const encode = ENCODE[coding];
  if (encoder && encode && chunked) {
    res.writeHead(reply.status, headers);
    const stream = encoder();
    let sent = 0;
    stream.on('data', (c: Buffer) => (sent += c.length));
    await pipeline(Readable.from([body]), stream, res).catch(() => undefined);
    return sent;
  }
  const wire = encode ? await encode(body) : body;
  res.writeHead(reply.status, { ...headers, 'Content-Length': String(wire.length) });
  res.end(wire);
  return wire.length;
}

/** The request body as text, or undefined when it exceeds `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (total > limit) return undefined;
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** `Authorization` and friends as one string per name (Node gives arrays for repeated headers). */
export function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
