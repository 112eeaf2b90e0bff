/**
 * The HTTP side of remote write: one client for a receiver URL with the options of a Prometheus
 * `remote_write` section (basic auth, bearer token file, CA / client certificate and key, extra
 * headers such as a tenant id), sending WriteRequest bodies with retries and back-off.
 *
 * A batch is retried on what may pass (5xx, 429 with its Retry-After, network errors, timeouts), a
 * bounded number of times; any other 4xx is the target refusing the samples (too old, out of
 * order, a tenant limit), which sending again does not change: it stops the backfill with the
 * target's answer (RemoteWriteRefusedError).
 */
import { readFileSync } from 'node:fs';
import { Agent, request, type Dispatcher } from 'undici';
import { DEFAULT_USER_AGENT } from '../version.js';
import { writeRequestBody } from './write-request.js';

/** Headers the protocol sets; a `--remote-write.header` may not replace them (as in Prometheus). */
const RESERVED_HEADERS = new Set(['authorization', 'content-encoding', 'content-type', 'content-length', 'host', 'user-agent', 'x-prometheus-remote-write-version']);

export interface RemoteWriteSettings {
  readonly url: string;
  readonly basicAuth?: { readonly username: string; readonly password: string };
  readonly bearerToken?: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: { readonly ca?: Buffer; readonly cert?: Buffer; readonly key?: Buffer; readonly insecureSkipVerify: boolean };
  readonly timeoutSeconds: number;
  /** Samples in one request at most. */
  readonly maxSamplesPerSend: number;
  /** Attempts of one request before the backfill gives up on the target. */
  readonly maxAttempts: number;
}

export const DEFAULT_MAX_SAMPLES_PER_SEND = 10_000;
export const DEFAULT_REMOTE_WRITE_TIMEOUT_SECONDS = 30;
export const DEFAULT_MAX_ATTEMPTS = 8;
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
const MAX_RETRY_AFTER_MS = 5 * 60_000;

export class RemoteWriteFlagError extends Error {}

/** The flags of the remote_write options, as parseArgs gives them. */
export interface RemoteWriteFlags {
  readonly 'remote-write.url'?: string;
  readonly 'remote-write.basic-auth.username'?: string;
  readonly 'remote-write.basic-auth.password-file'?: string;
  readonly 'remote-write.bearer-token-file'?: string;
  readonly 'remote-write.tls.ca-file'?: string;
  readonly 'remote-write.tls.cert-file'?: string;
  readonly 'remote-write.tls.key-file'?: string;
  readonly 'remote-write.tls.insecure-skip-verify'?: boolean;
  readonly 'remote-write.header'?: readonly string[];
  readonly 'remote-write.max-samples-per-send'?: string;
}

function readSecretFile(flag: string, path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (e) {
    throw new RemoteWriteFlagError(`${flag}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

function readPem(flag: string, path: string | undefined): Buffer | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (e) {
    throw new RemoteWriteFlagError(`${flag}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

function parseHeaders(lines: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new RemoteWriteFlagError(`--remote-write.header: ${JSON.stringify(line)} is not "Name: value"`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw new RemoteWriteFlagError(`--remote-write.header: ${name} is set by the protocol or by the auth flags and cannot be given`);
    out[name] = line.slice(colon + 1).trim();
  }
  return out;
}

/** The settings from the flags (undefined without --remote-write.url); file contents are read here. */
export function remoteWriteSettings(flags: RemoteWriteFlags): RemoteWriteSettings | undefined {
  const url = flags['remote-write.url'];
  if (url === undefined) {
    const stray = Object.entries(flags).find(([k, v]) => k.startsWith('remote-write.') && v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0));
    if (stray) throw new RemoteWriteFlagError(`--${stray[0]}: only with --remote-write.url`);
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RemoteWriteFlagError(`--remote-write.url: ${JSON.stringify(url)} is not a URL (e.g. http://prometheus:9090/api/v1/write)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new RemoteWriteFlagError(`--remote-write.url: must be http:// or https://, got ${parsed.protocol}`);
  if (parsed.username !== '' || parsed.password !== '') throw new RemoteWriteFlagError('--remote-write.url: give credentials with --remote-write.basic-auth.* or --remote-write.bearer-token-file, not in the URL');
  const username = flags['remote-write.basic-auth.username'];
  const passwordFile = flags['remote-write.basic-auth.password-file'];
  const tokenFile = flags['remote-write.bearer-token-file'];
  if ((username === undefined) !== (passwordFile === undefined)) throw new RemoteWriteFlagError('--remote-write.basic-auth.username and --remote-write.basic-auth.password-file go together');
  if (username !== undefined && tokenFile !== undefined) throw new RemoteWriteFlagError('--remote-write.bearer-token-file: give basic auth or a bearer token, not both');
  const certFile = flags['remote-write.tls.cert-file'];
  const keyFile = flags['remote-write.tls.key-file'];
  if ((certFile === undefined) !== (keyFile === undefined)) throw new RemoteWriteFlagError('--remote-write.tls.cert-file and --remote-write.tls.key-file go together');
  const maxText = flags['remote-write.max-samples-per-send'];
  const max = maxText === undefined ? DEFAULT_MAX_SAMPLES_PER_SEND : /^\d{1,7}$/.test(maxText) ? Number(maxText) : Number.NaN;
  if (!Number.isInteger(max) || max < 1 || max > 1_000_000) throw new RemoteWriteFlagError(`--remote-write.max-samples-per-send: a whole number from 1 to 1000000, got ${JSON.stringify(maxText)}`);
  return {
    url: parsed.toString(),
    ...(username !== undefined && passwordFile !== undefined ? { basicAuth: { username, password: readSecretFile('--remote-write.basic-auth.password-file', passwordFile) } } : {}),
    ...(tokenFile !== undefined ? { bearerToken: readSecretFile('--remote-write.bearer-token-file', tokenFile) } : {}),
    headers: parseHeaders(flags['remote-write.header'] ?? []),
    tls: {
      ca: readPem('--remote-write.tls.ca-file', flags['remote-write.tls.ca-file']),
      cert: readPem('--remote-write.tls.cert-file', certFile),
      key: readPem('--remote-write.tls.key-file', keyFile),
      insecureSkipVerify: flags['remote-write.tls.insecure-skip-verify'] === true,
    },
    timeoutSeconds: DEFAULT_REMOTE_WRITE_TIMEOUT_SECONDS,
    maxSamplesPerSend: max,
    maxAttempts: DEFAULT_MAX_ATTEMPTS,
  };
}

/** The secrets of the settings, for the scrubber. */
export function remoteWriteSecrets(s: RemoteWriteSettings | undefined): string[] {
  return [s?.basicAuth?.password, s?.bearerToken].filter((x): x is string => x !== undefined && x !== '');
}

/** The target kept refusing, or refused for good: what it said. */
export class RemoteWriteError extends Error {
  constructor(
    message: string,
    /** The HTTP status, when there was one. */
    readonly status?: number,
    /** True when the target refused the request as such (a 4xx other than 429): retrying cannot help. */
    readonly refused = false,
  ) {
    super(message);
  }
}

export interface Answer {
  readonly status: number;
  readonly text: string;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

function retryAfterMs(header: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(header) ? header[0] : header;
  if (text === undefined) return undefined;
  const seconds = /^\s*\d+\s*$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now;
  return Number.isFinite(seconds) ? Math.min(Math.max(0, seconds), MAX_RETRY_AFTER_MS) : undefined;
}

/** The origin and path of a URL, for messages (no query: it may hold a token). */
export function shownUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

export class RemoteWriteClient {
  private readonly dispatcher: Dispatcher;
  private readonly auth: string | undefined;

  constructor(readonly settings: RemoteWriteSettings) {
    const { tls } = settings;
    this.dispatcher = new Agent({
      connect: { ...(tls.ca ? { ca: tls.ca } : {}), ...(tls.cert ? { cert: tls.cert, key: tls.key } : {}), rejectUnauthorized: !tls.insecureSkipVerify },
      headersTimeout: settings.timeoutSeconds * 1000,
      bodyTimeout: settings.timeoutSeconds * 1000,
    });
    const { basicAuth, bearerToken } = settings;
    this.auth = basicAuth
      ? `Basic ${Buffer.from(`${basicAuth.username}:${basicAuth.password}`).toString('base64')}`
      : bearerToken !== undefined
        ? `Bearer ${bearerToken}`
        : undefined;
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return { ...this.settings.headers, 'User-Agent': DEFAULT_USER_AGENT, ...(this.auth ? { Authorization: this.auth } : {}), ...extra };
  }

  /** One POST of a body; the answer, or a network error thrown. */
  async post(body: Buffer, signal?: AbortSignal): Promise<Answer & { retryAfterMs?: number }> {
    const r = await request(this.settings.url, {
      method: 'POST',
      body,
      dispatcher: this.dispatcher,
      signal,
      headers: this.headers({ 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'snappy', 'X-Prometheus-Remote-Write-Version': '0.1.0' }),
    });
    const text = (await r.body.text()).slice(0, 1000);
    const after = r.statusCode === 429 || r.statusCode === 503 ? retryAfterMs(r.headers['retry-after'], Date.now()) : undefined;
    return { status: r.statusCode, text, ...(after !== undefined ? { retryAfterMs: after } : {}) };
  }

  /** GET of another URL of the same server (its status API), with the same TLS and auth. */
  async get(url: string, signal?: AbortSignal): Promise<Answer> {
    const r = await request(url, { method: 'GET', dispatcher: this.dispatcher, signal: signal ?? AbortSignal.timeout(this.settings.timeoutSeconds * 1000), headers: this.headers({}) });
    return { status: r.statusCode, text: (await r.body.text()).slice(0, 1_000_000) };
  }

  /**
   * Sends one WriteRequest body until the target takes it: retried with back-off on 5xx, 429 and
   * network errors, at most `maxAttempts` times. `stopping` ends the waits between attempts (the
   * batch then counts as not sent). Resolves with the attempts it took.
   */
  async send(body: Buffer, stopping?: AbortSignal, random: () => number = Math.random): Promise<number> {
    const { maxAttempts } = this.settings;
    let last = '';
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (stopping?.aborted) throw new RemoteWriteError('stopped before the target took the batch');
      let wait = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1)) * (0.5 + random() / 2);
      try {
        const answer = await this.post(body, AbortSignal.timeout(this.settings.timeoutSeconds * 1000));
        if (answer.status >= 200 && answer.status < 300) return attempt;
        last = `${answer.status} ${answer.text.trim()}`.trim();
        if (answer.status !== 429 && answer.status < 500) {
          throw new RemoteWriteError(`${shownUrl(this.settings.url)} refused the samples: ${last}`, answer.status, true);
        }
        if (answer.retryAfterMs !== undefined) wait = answer.retryAfterMs;
      } catch (e) {
        if (e instanceof RemoteWriteError) throw e;
        last = (e as Error).message;
      }
      if (attempt < maxAttempts) await sleep(wait, stopping);
    }
    throw new RemoteWriteError(`${shownUrl(this.settings.url)} did not take a batch after ${maxAttempts} attempts: ${last}`);
  }

  /** An empty WriteRequest: does the target take requests from us at all? */
  probe(): Promise<Answer> {
    return this.post(writeRequestBody([]), AbortSignal.timeout(this.settings.timeoutSeconds * 1000));
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}
