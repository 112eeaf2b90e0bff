/** Replies as plain data, so fault injection can alter them before they are written. */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface Reply {
  status: number;
  /** Exact bytes to send (already serialized). */
  body: string;
  headers?: Record<string, string>;
  /** Rows of a page (the connector history's pace is per row). */
  rows?: number;
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
