/**
 * Fault answers that are written over time rather than at once: a body dripped byte by byte (to
 * defeat idle timeouts) and an oversize body produced while it is sent (never held in memory).
 * Both stop as soon as the client goes away.
 */
import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ENCODERS, type Reply } from './http-io.js';

const CHUNK = 64 * 1024;
const PREFIX = '{"padding":"';
const SUFFIX = '"}';

/** Sends the reply's body one byte every `everyMs` ms; returns the bytes sent when it ends. */
export function sendDrip(res: ServerResponse, reply: Reply, everyMs: number, timers: Set<NodeJS.Timeout>): Promise<number> {
  const body = Buffer.from(reply.body, 'utf8');
  res.writeHead(reply.status, { 'Content-Type': 'application/json', 'Content-Length': String(body.length), ...reply.headers });
  res.flushHeaders();
  return new Promise((resolve) => {
    let sent = 0;
    const step = (): void => {
      if (res.destroyed || sent >= body.length) {
        if (!res.destroyed) res.end();
        resolve(sent);
        return;
      }
      res.write(body.subarray(sent, sent + 1));
      sent += 1;
      const timer = setTimeout(() => {
        timers.delete(timer);
        step();
      }, everyMs);
      timers.add(timer);
    };
    res.on('close', () => resolve(sent));
    step();
  });
}

/** The i-th chunk of a JSON body of `total` bytes: `{"padding":"xxxx…"}` (only spaces below 14 bytes). */
function chunkAt(offset: number, total: number): Buffer {
  const size = Math.min(CHUNK, total - offset);
  if (total < PREFIX.length + SUFFIX.length) return Buffer.alloc(size, ' ');
  const buf = Buffer.alloc(size, 'x');
  const head = Buffer.from(PREFIX);
  if (offset < head.length) head.subarray(offset).copy(buf, 0, 0, Math.min(size, head.length - offset));
  const tailStart = total - SUFFIX.length;
  for (let i = Math.max(offset, tailStart); i < offset + size; i++) buf[i - offset] = SUFFIX.charCodeAt(i - tailStart);
  return buf;
}

/**
 * Sends a 200 with a JSON body of `total` bytes, honouring back-pressure; returns the bytes written.
 * With an `encoding` the simulator can produce, the body is compressed as it is made (always chunked):
 * a few kilobytes on the wire that inflate to `total` bytes, a decompression bomb.
 */
export async function sendOversize(res: ServerResponse, total: number, chunked: boolean, encoding?: string): Promise<number> {
  const encoder = encoding === undefined ? undefined : ENCODERS[encoding];
  if (encoder) return sendEncodedOversize(res, total, encoding as string, encoder());
  res.writeHead(200, {
    'Content-Type': 'application/json',
    ...(encoding === undefined ? {} : { 'Content-Encoding': encoding }),
    ...(chunked ? {} : { 'Content-Length': String(total) }),
  });
  let offset = 0;
  while (offset < total && !res.destroyed) {
    const chunk = chunkAt(offset, total);
    offset += chunk.length;
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  if (!res.destroyed) res.end();
  return offset;
}

async function sendEncodedOversize(res: ServerResponse, total: number, encoding: string, encoder: NodeJS.ReadWriteStream): Promise<number> {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': encoding });
  let sent = 0;
  encoder.on('data', (c: Buffer) => (sent += c.length));
  function* chunks(): Generator<Buffer> {
    for (let offset = 0; offset < total && !res.destroyed; offset += CHUNK) yield chunkAt(offset, total);
  }
  // The client hanging up ends the pipeline with an error: what was sent is the answer.
  await pipeline(Readable.from(chunks()), encoder, res).catch(() => undefined);
  return sent;
}
