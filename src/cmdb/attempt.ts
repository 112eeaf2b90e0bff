/**
 * One HTTP attempt against the CMDB: the request, same-origin redirects, the per-attempt deadline
 * (headers and body), and the response size cap. Failures come back as CmdbError subclasses; the
 * caller decides about retries and metrics.
 */
import { STATUS_CODES } from 'node:http';
import type { Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import type { Dispatcher } from 'undici';
import {
  CmdbAbortedError,
  CmdbEncodingError,
  CmdbError,
  CmdbNetworkError,
  CmdbRedirectRefusedError,
  CmdbTimeoutError,
  CmdbTooLargeError,
  errorCode,
} from '../errors.js';
import { followAbort } from '../signals.js';
import type { FirstByteOption } from './first-byte.js';

export interface AttemptRequest {
  method: 'GET' | 'POST';
  /** Scheme, host and port: `https://cmdb.example.com`. */
  origin: string;
  /**
   * Path and query exactly as sent. Never passed through `new URL`: the WHATWG parser resolves an
   * encoded `%2E%2E` segment as `..`, which would let an id climb out of its path.
   */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** `METHOD /path` without the query string, for error messages. */
  request: string;
}

export interface AttemptLimits {
  dispatcher: Dispatcher;
  timeoutSeconds: number;
  connectTimeoutSeconds: number;
  /** The answer's head must come within this (seconds) of the request leaving; default: timeoutSeconds for all of it. */
  firstByteSeconds?: number;
  maxResponseBytes: number;
  /** The name of that cap in the too_large message (default maxResponseBytes). */
  capName?: string;
  signal?: AbortSignal;
  /** Called before a same-origin redirect is followed; the hop waits for it (the transport charges it to the budget). */
  onRedirect?: (status: number, fromPath: string, toPath: string) => void | Promise<void>;
  /** Called as each request of the chain (the first and every hop) is handed to the dispatcher (a hop whose deadline passed in the budget's line is never sent nor announced). */
  onSend?: () => void;
  /** Called as each request of the chain writes its first byte (first-byte.ts): later than onSend by the time its connection took to open. */
  onFirstByte?: () => void;
}

export interface Reply {
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  /** The whole body of a 2xx, decoded (Content-Encoding); at most ERROR_BODY_BYTES of any other status. */
  body: Buffer;
  /** Bytes that came over the wire for this body (before decoding; equals body.length for identity). */
  wireBytes?: number;
}

/** What every request accepts, each decoded here; an answer in any other coding is refused, named (docs/design.md, "Compressed answers"). */
const ACCEPT_ENCODING = 'gzip, deflate, br';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;
/** Enough of an error body to read a token rejection's code/message; the rest is dropped. */
const ERROR_BODY_BYTES = 16 * 1024;

type ResponseBody = Dispatcher.ResponseData['body'];
type IncomingHttpHeaders = Dispatcher.ResponseData['headers'];

export async function attempt(req: AttemptRequest, limits: AttemptLimits): Promise<Reply> {
  const { signal } = limits;
  if (signal?.aborted) throw new CmdbAbortedError(req.request);
  // One controller for both the deadline and the caller's signal (AbortSignal.any leaks listeners
  // on long-lived signals in Node 20).
  const ctl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctl.abort(new Error('deadline'));
  }, limits.timeoutSeconds * 1000);
  // followAbort: up to maxConcurrency (64) attempts share one poll's signal, one listener on it.
  const leave = signal ? followAbort(signal, () => ctl.abort(new Error('aborted'))) : undefined;
  try {
    return await follow(req, limits, ctl.signal);
  } catch (err) {
    throw classify(err, req.request, limits, timedOut);
  } finally {
    clearTimeout(timer);
    leave?.();
  }
}

async function follow(req: AttemptRequest, limits: AttemptLimits, signal: AbortSignal): Promise<Reply> {
  let { origin, path, method, body } = req;
  const headers = { 'Accept-Encoding': ACCEPT_ENCODING, ...req.headers };
  for (let hops = 0; ; hops++) {
    signal.throwIfAborted();
    limits.onSend?.();
    const options: Dispatcher.RequestOptions & FirstByteOption = {
      origin,
      path,
      method,
      headers,
      body,
      signal,
      ...(limits.firstByteSeconds !== undefined ? { headersTimeout: limits.firstByteSeconds * 1000 } : {}),
      ...(limits.onFirstByte ? { onFirstByte: limits.onFirstByte } : {}),
    };
    const res = await limits.dispatcher.request(options);
    const location = res.headers.location;
    if (!REDIRECT_STATUSES.has(res.statusCode) || typeof location !== 'string') {
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      const read = ok ? await readCapped(res.body, res.headers, limits, req.request) : await readHead(res.body, res.headers, ERROR_BODY_BYTES);
      return { status: res.statusCode, statusText: STATUS_CODES[res.statusCode] ?? '', headers: res.headers, body: read.body, wireBytes: read.wire };
    }
    await discard(res.body);
    const next = new URL(location, `${origin}${path}`);
    // The Authorization header must never reach another host (or the same host on another port/scheme).
    if (next.origin !== origin) {
      throw new CmdbRedirectRefusedError(req.request, `${res.statusCode} redirect to another origin (${next.origin}) refused`);
    }
    if (hops >= MAX_REDIRECTS) {
      throw new CmdbRedirectRefusedError(req.request, `more than ${MAX_REDIRECTS} redirects`);
    }
    // As fetch does: 303, and 301/302 after a POST, continue as a GET without a body.
    if (res.statusCode === 303 || (method === 'POST' && (res.statusCode === 301 || res.statusCode === 302))) {
      method = 'GET';
      body = undefined;
    }
    const nextPath = `${next.pathname}${next.search}`;
    await limits.onRedirect?.(res.statusCode, path.split('?')[0] ?? path, next.pathname);
    origin = next.origin;
    path = nextPath;
  }
}

/** A body as read: its (decoded) bytes and how many bytes came over the wire. */
interface Read {
  body: Buffer;
  wire: number;
}

/** Content codings we decode, by their name in Content-Encoding. */
const DECODERS: Readonly<Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress>> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/** A coding name as the server wrote it, or a placeholder when it is not a plain token (server text is not echoed). */
const TOKEN = /^[\w.+-]{1,32}$/;
const shown = (coding: string) => (TOKEN.test(coding) ? `"${coding}"` : 'an unreadable value');

/**
 * The codings of Content-Encoding in the order they must be undone (the header lists them in the
 * order they were applied). `identity` is no coding. Throws, naming it, on one we cannot decode.
 */
function codingsOf(headers: IncomingHttpHeaders, request: string): string[] {
  const raw = headers['content-encoding'];
  const value = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
  const codings = value
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  for (const c of codings) {
    if (!(c in DECODERS)) {
      throw new CmdbEncodingError(request, `the answer is in Content-Encoding ${shown(c)}, which the exporter cannot decode (it asks for ${ACCEPT_ENCODING} or none): a proxy in between may be changing the encoding`);
    }
  }
  return codings.reverse();
}

/**
 * The body of a 2xx, never more than the cap: refused on its Content-Length, else dropped with its
 * connection as soon as the running total passes it. The cap counts decoded bytes of a compressed body.
 */
async function readCapped(body: ResponseBody, headers: IncomingHttpHeaders, limits: AttemptLimits, request: string): Promise<Read> {
  const max = limits.maxResponseBytes;
  const tooLarge = () => new CmdbTooLargeError(request, max, limits.capName);
  const declared = Number(headers['content-length']);
  let codings: string[];
  try {
    codings = codingsOf(headers, request);
  } catch (err) {
    abandon(body);
    throw err;
  }
  if (Number.isFinite(declared) && declared > max) {
    abandon(body);
    throw tooLarge();
  }
  if (codings.length > 0) return readDecoded(body, codings, max, request, tooLarge);
  // With a declared length the body is copied into one buffer as it arrives: a 25 MB page then
  // needs 25 MB, not the chunks plus their concatenation.
  const whole = Number.isInteger(declared) && declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (total + chunk.length > max) {
      abandon(body);
      throw tooLarge();
    }
    if (whole && total + chunk.length <= whole.length) chunk.copy(whole, total);
    else chunks.push(chunk);
    total += chunk.length;
  }
  if (whole && chunks.length === 0) return { body: total === whole.length ? whole : whole.subarray(0, total), wire: total };
  // Longer than declared: what filled `whole` is a prefix, the rest is in `chunks`.
  const spilled = chunks.reduce((n, c) => n + c.length, 0);
  const parts = whole ? [whole.subarray(0, total - spilled), ...chunks] : chunks;
  return { body: Buffer.concat(parts, total), wire: total };
}

/**
 * `body` through the decoders of `codings`, held up to `max` decoded bytes. Past `max`, `overflow`
 * decides: throw (a 2xx) or keep the first `max` bytes (an error body). A failure of the wire
 * (timeout, reset, abort) is rethrown as it is; a failure of a decoder is named with its coding.
 */
async function readDecoded(
  body: ResponseBody,
  codings: readonly string[],
  max: number,
  request: string,
  overflow: (() => Error) | 'truncate',
): Promise<Read> {
  let wire = 0;
  let wireError: unknown;
  body.on('data', (chunk: Buffer) => (wire += chunk.length));
  body.on('error', (err) => (wireError ??= err));
  const stages: Readable[] = [];
  let failed: string | undefined;
  let stream: Readable = body;
  for (const coding of codings) {
    const decoder = (DECODERS[coding] as () => zlib.Gunzip)();
    decoder.on('error', () => (failed ??= coding));
    stream.on('error', (err) => decoder.destroy(err));
    stream.pipe(decoder);
    stages.push(decoder);
    stream = decoder;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  const stop = () => {
    for (const s of stages) {
      s.on('error', () => {});
      s.destroy();
    }
    abandon(body);
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (total + chunk.length > max) {
        if (overflow !== 'truncate') throw overflow();
        chunks.push(chunk.subarray(0, max - total));
        total = max;
        break;
      }
      chunks.push(chunk);
      total += chunk.length;
    }
  } catch (err) {
    stop();
    if (err instanceof CmdbError || wireError !== undefined || failed === undefined) throw err;
    if (overflow === 'truncate') return { body: Buffer.concat(chunks, total), wire };
    const code = errorCode(err);
    throw new CmdbEncodingError(request, `the answer's Content-Encoding ${shown(failed)} could not be decoded (${code ?? 'corrupt data'}): a proxy in between may label an answer compressed that is not`, { cause: err });
  }
  // Read to its end: the connection goes back to the pool. Cut short (an error body's head): dropped.
  if (overflow === 'truncate' && total >= max) stop();
  return { body: Buffer.concat(chunks, total), wire };
}

/** The first `max` bytes (decoded, when the body is compressed); the rest is dropped with the connection (error bodies are rarely big). */
async function readHead(body: ResponseBody, headers: IncomingHttpHeaders, max: number): Promise<Read> {
  let codings: string[] | undefined;
  try {
    codings = codingsOf(headers, '');
  } catch {
    // An error body we cannot decode says nothing we could read: the status speaks for itself.
    abandon(body);
    return { body: Buffer.alloc(0), wire: 0 };
  }
  if (codings.length > 0) return readDecoded(body, codings, max, '', 'truncate');
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    total += chunk.length;
    if (total >= max) {
      abandon(body);
      break;
    }
  }
  return { body: Buffer.concat(chunks, total).subarray(0, max), wire: total };
}

/** Drops the rest of a body with its connection. undici reports that as an error event; nobody needs it. */
function abandon(body: ResponseBody): void {
  body.on('error', () => {});
  body.destroy();
}

async function discard(body: ResponseBody): Promise<void> {
  try {
    await body.dump({ limit: ERROR_BODY_BYTES });
  } catch {
    // A redirect body we do not read; a failure here does not change the outcome.
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function classify(err: unknown, request: string, limits: AttemptLimits, timedOut: boolean): CmdbError {
  if (err instanceof CmdbError) return err;
  if (limits.signal?.aborted) return new CmdbAbortedError(request);
  const code = errorCode(err);
  if (!timedOut && code === 'UND_ERR_HEADERS_TIMEOUT' && limits.firstByteSeconds !== undefined) return new CmdbTimeoutError(request, limits.firstByteSeconds, { cause: err, firstByte: true });
  if (timedOut || (code && TIMEOUT_CODES.has(code))) return new CmdbTimeoutError(request, limits.timeoutSeconds, { cause: err });
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new CmdbTimeoutError(request, limits.connectTimeoutSeconds, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  return new CmdbNetworkError(request, `network error: ${code ? `${code} ` : ''}${message}`.slice(0, 300), { cause: err });
}

/** Certificate problems do not go away on a retry; every other network failure may. */
export function isRetryableNetworkError(err: CmdbNetworkError): boolean {
  const code = errorCode(err.cause) ?? '';
  return !(
    code.startsWith('ERR_TLS_') ||
    code.startsWith('CERT_') ||
    code.includes('SELF_SIGNED') ||
    code.startsWith('UNABLE_TO_') ||
    code === 'HOSTNAME_MISMATCH' ||
    code === 'UND_ERR_INVALID_ARG'
  );
}
