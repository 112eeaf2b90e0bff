/**
 * The HTTP side of remote write: one client for a receiver URL (remote-write-settings.ts has its
 * options), sending WriteRequest bodies, probing the receiver and asking its status API. Retried as
 * Prometheus' own remote write retries (docs/backfill.md, "What a receiver gets"): what may pass
 * (5xx, 429, a network error, a timeout) for `retryForSeconds`; any other 4xx stops the backfill
 * with the target's answer (RemoteWriteError).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { formatDuration } from '../config/durations.js';
import { retryAfterMs } from '../time.js';
import { DEFAULT_USER_AGENT } from '../version.js';
import { shownUrl, type RemoteWriteSettings } from './remote-write-settings.js';
import { writeRequestBody } from './write-request.js';

const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** Even a server that says "now" is not asked again at once. */
const MIN_WAIT_MS = 100;

/** The target kept failing past the retries, or refused the request for good: what it said. */
export class RemoteWriteError extends Error {}

export interface Answer {
  readonly status: number;
  readonly text: string;
  /** The wait the server's Retry-After asks for, ms (5xx and 429). */
  readonly retryAfterMs?: number;
}

/** A request that failed in a way that may pass, and is asked again after `waitMs`. */
export interface RetryNote {
  /** `POST /api/v1/write`, `GET /api/v1/status/config`. */
  readonly what: string;
  /** `503 Service Unavailable`, `connect ECONNREFUSED 127.0.0.1:9090`. */
  readonly why: string;
  /** Failed attempts of this request so far. */
  readonly attempt: number;
  readonly waitMs: number;
}

export interface ClientOptions {
  /** Told of every retry (the pre-flight check says it waits for a target that is restarting). */
  readonly onRetry?: (note: RetryNote) => void;
  /** A draw in [0, 1) for the back-off's jitter. */
  readonly random?: () => number;
}

const recoverable = (status: number) => status === 429 || status >= 500;

/** Resolves after `ms`, or at once when `signal` aborts. */
const sleep = (ms: number, signal?: AbortSignal): Promise<void> => delay(ms, undefined, { signal }).catch(() => undefined);

export class RemoteWriteClient {
  private readonly dispatcher: Dispatcher;
  private readonly auth: string | undefined;

  constructor(
    readonly settings: RemoteWriteSettings,
    private readonly opts: ClientOptions = {},
  ) {
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

  /** One request: its answer, or a network error (a timeout included) thrown. */
  private async once(url: string, body: Buffer | undefined, limit: number): Promise<Answer> {
    const signal = AbortSignal.timeout(this.settings.timeoutSeconds * 1000);
    const headers = body ? this.headers({ 'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'snappy', 'X-Prometheus-Remote-Write-Version': '0.1.0' }) : this.headers({});
    const r = await request(url, { method: body ? 'POST' : 'GET', dispatcher: this.dispatcher, signal, headers, ...(body ? { body } : {}) });
    const text = (await r.body.text()).slice(0, limit);
    const after = recoverable(r.statusCode) ? retryAfterMs(r.headers['retry-after'], r.headers.date, Date.now()) : undefined;
    return { status: r.statusCode, text, ...(after !== undefined ? { retryAfterMs: after } : {}) };
  }

  /**
   * The request until an answer that is not a failure which may pass (a 2xx, or a 4xx other than
   * 429), with the attempts it took; RemoteWriteError after `retryForSeconds`, or when `stopping` ends a wait.
   */
  private async retrying(url: string, body: Buffer | undefined, limit: number, stopping?: AbortSignal): Promise<{ answer: Answer; attempts: number }> {
    const { retryForSeconds } = this.settings;
    const what = `${body ? 'POST' : 'GET'} ${new URL(url).pathname}`;
    const deadline = Date.now() + retryForSeconds * 1000;
    const random = this.opts.random ?? Math.random;
    for (let attempt = 1; ; attempt++) {
      if (stopping?.aborted) throw new RemoteWriteError(`stopped before ${shownUrl(url)} answered`);
      let why: string;
      let asked: number | undefined;
      try {
        const answer = await this.once(url, body, limit);
        if (!recoverable(answer.status)) return { answer, attempts: attempt };
        why = `${answer.status} ${answer.text.trim().slice(0, 300)}`.trim();
        asked = answer.retryAfterMs;
      } catch (e) {
        why = (e as Error).message;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new RemoteWriteError(`${shownUrl(url)} did not take the request within ${formatDuration(retryForSeconds)} (--remote-write.retry-for; ${attempt} attempts): ${why}`);
      const backoff = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1)) * (0.5 + random() / 2);
      const waitMs = Math.min(left, Math.max(MIN_WAIT_MS, asked ?? backoff));
      this.opts.onRetry?.({ what, why, attempt, waitMs });
      await sleep(waitMs, stopping);
    }
  }

  /** Sends one WriteRequest body until the target takes it (`stopping` ends the waits); resolves with the attempts. */
  async send(body: Buffer, stopping?: AbortSignal): Promise<number> {
    const { answer, attempts } = await this.retrying(this.settings.url, body, 1000, stopping);
    if (answer.status >= 200 && answer.status < 300) return attempts;
    const said = `${answer.status} ${answer.text.trim()}`.trim();
    throw new RemoteWriteError(`${shownUrl(this.settings.url)} refused the samples: ${said}`);
  }

  /** An empty WriteRequest, retried as above: does the target take requests from us at all? Its final answer. */
  async probe(stopping?: AbortSignal): Promise<Answer> {
    return (await this.retrying(this.settings.url, writeRequestBody([]), 1000, stopping)).answer;
  }

  /** GET of another URL of the same server (its status API), with the same TLS and auth, retried as above. */
  async get(url: string, stopping?: AbortSignal): Promise<Answer> {
    return (await this.retrying(url, undefined, 1_000_000, stopping)).answer;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}
