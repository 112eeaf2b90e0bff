/**
 * A logical request to the CMDB: the stack's rate budget and in-flight cap, retries with back-off
 * for network errors, timeouts, 5xx and bodies cut short, waits as a 429 or a Retry-After asks, and
 * the request metrics of every attempt. Knows nothing about tokens or paths; the client builds the exchange.
 */
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { StackConfig } from '../config/types.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Logger } from '../logger.js';
import {
  CmdbAbortedError,
  CmdbInvalidBodyError,
  CmdbNetworkError,
  CmdbRateLimitedError,
  CmdbTimeoutError,
  requestOutcome,
  statusOutcome,
  type RequestOutcome,
} from '../errors.js';
import type { EndpointName } from '../api/endpoints.js';
import { eitherSignal } from '../signals.js';
import { attempt, isRetryableNetworkError, type Reply } from './attempt.js';
import { backoffDelayMs, parseRetryAfter } from './backoff.js';
import { bodyCap, type BodyCap } from './body.js';
import { StackLimiter, type BudgetState } from './budget.js';
import type { Clock } from './clock.js';
import { deadlineOf, type RequestContext } from '../api/request-context.js';

export interface Exchange {
  endpoint: EndpointName;
  method: 'GET' | 'POST';
  /** Path from PATHS / TOKEN_PATH, ids already encoded. */
  path: string;
  /** Query string without '?', values already percent-encoded. */
  query?: string;
  headers: Record<string, string>;
  body?: string;
  /**
   * Retry an attempt that timed out (default true). Off for connector history pages: the reader
   * asks for the page again at half the size instead of at the same size.
   */
  retryTimeouts?: boolean;
}

/**
 * Turns a 2xx into the caller's value; may be asynchronous (connector pages are parsed in a worker).
 * It runs inside the attempt, so its failure (invalid_body) is that request's outcome.
 */
export type Decoder<T> = (reply: Reply, request: string) => T | Promise<T>;

/** A 2xx decoded by the caller's `decode`, or the final non-2xx reply (after any retries). */
export type Outcome<T> = { ok: true; status: number; value: T } | { ok: false; reply: Reply };

export interface TransportOptions {
  stack: StackConfig;
  instruments: Instruments;
  logger: Logger;
  dispatcher: Dispatcher;
  clock: Clock;
  random: () => number;
  /** The budget the stack's previous runtime left (a reload must not start with a full bucket). */
  budget?: BudgetState;
  /** Told the outcome of every request that left (what cmdb_endpoint_requests_total counts). */
  onRequest?: (outcome: RequestOutcome) => void;
}

export function requestName(method: string, path: string): string {
  return `${method} ${path}`;
}

export class Transport {
  readonly limiter: StackLimiter;
  private readonly stack: StackConfig;
  private readonly ins: Instruments;
  private readonly logger: Logger;
  private readonly dispatcher: Dispatcher;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly onRequest: ((outcome: RequestOutcome) => void) | undefined;
  /** 429s without Retry-After in a row on this stack: each doubles the pause of the next. */
  private refusalStreak = 0;
  /** When that pause was last grown (clock ms). */
  private refusalPauseSetAt = Number.NEGATIVE_INFINITY;
  /** Answers of the CMDB to this stack's requests other than a 429, counted. */
  private acceptances = 0;

  constructor(opts: TransportOptions) {
    this.stack = opts.stack;
    this.ins = opts.instruments;
    this.logger = opts.logger;
    this.dispatcher = opts.dispatcher;
    this.clock = opts.clock;
    this.random = opts.random;
    this.onRequest = opts.onRequest;
    const stackLabel = { stack: opts.stack.name };
    this.limiter = new StackLimiter({
      ratePerMinute: opts.stack.rateLimitPerMinute,
      maxConcurrency: opts.stack.maxConcurrency,
      clock: opts.clock,
      inherited: opts.budget,
      onWait: (seconds) => this.ins.rateLimitWait.inc(stackLabel, seconds),
    });
  }

  /** What this stack's budget has spent, for its next runtime. */
  budgetState(): BudgetState {
    return this.limiter.state();
  }

  /** The stack stops: waits for the budget, a pause, a slot or a retry's back-off end at once (StackLimiter.stopWaiting). */
  stopWaiting(): void {
    this.limiter.stopWaiting();
  }

  /** Ends a Retry-After pause of the stack (on reload). */
  resume(): void {
    this.limiter.resume();
    this.ins.rateLimitPausedUntil.set({ stack: this.stack.name }, 0);
  }

  /** Unix seconds when the stack's Retry-After pause ends; undefined while it is not paused. */
  pausedUntil(): number | undefined {
    const ms = this.limiter.pausedForMs();
    return ms > 0 ? (this.clock.now() + ms) / 1000 : undefined;
  }

  /**
   * Sends `ex` with retries. `decode` runs on a 2xx inside the attempt, so its failure is that attempt's outcome.
   *
   * A network error, a timeout, a 5xx and a 2xx that is not JSON (a body cut short) spend one of
   * retries.max. A 429 of a poll's request does not: it is the CMDB asking us to wait, and the
   * request waits as asked, however often, while its poll's time allows (at most MAX_REFUSALS in a
   * row), unless the CMDB answers the stack's other requests meanwhile (then the refusal is about this
   * request and spends a retry); a request without a poll deadline (the shared token fetch) spends a retry per 429. A Retry-After on a
   * 429, 502, 503 or 504 holds the whole stack back (the server would refuse its other requests
   * too), measured against the response's Date header; a 429 without one holds it back on a pause
   * that grows with every refusal in a row. No retry leaves sooner than retries.minDelaySeconds.
   */
  async send<T>(ex: Exchange, decode: Decoder<T>, ctx: RequestContext = {}): Promise<Outcome<T>> {
    const { signal } = ctx;
    const request = requestName(ex.method, ex.path);
    const base = new URL(this.stack.baseUrl);
    // Only the origin goes through the URL parser; the path is sent as built (see AttemptRequest.path).
    const target = { origin: base.origin, path: `${base.pathname.replace(/\/+$/, '')}${ex.path}${ex.query ? `?${ex.query}` : ''}` };
    const { max } = this.stack.retries;
    let retry = 0;
    let refusals = 0;
    /** Refusals of this request while the CMDB answered the stack's other requests (see below). */
    let ownRefusals = 0;
    for (;;) {
      let outcome: Outcome<T>;
      const sent = { at: this.clock.now() };
      const acceptedBefore = this.acceptances;
      try {
        outcome = await this.once(ex, target, request, decode, signal, retry + refusals + 1, sent);
      } catch (err) {
        if (retry >= max || !isRetryable(err) || (ex.retryTimeouts === false && err instanceof CmdbTimeoutError)) throw err;
        await this.backoff(retry++, request, signal);
        continue;
      }
      if (outcome.ok) {
        this.accepted();
        return outcome;
      }
      const { status } = outcome.reply;
      if (status === 429) {
        // The account's limit refuses every request of the stack alike. A 429 to this request while
        // the CMDB answered another one while this attempt waited or was in flight is about this request (a proxy's
        // per-path limit, a broken route): it spends a retry, so one endpoint fails alone instead of
        // waiting out its poll and taking the other endpoints of its group down with it.
        if (this.acceptances > acceptedBefore && ++ownRefusals > max) {
          throw new CmdbRateLimitedError(request, `429 Too Many Requests ${ownRefusals} times while the CMDB answered other requests of the stack`);
        }
        await this.afterTooManyRequests(outcome.reply, ++refusals, sent.at, request, ctx);
        continue;
      }
      this.accepted();
      if (status >= 500 && retry < max) {
        const asked = RETRY_AFTER_STATUSES.has(status) ? this.retryAfterMs(outcome.reply) : undefined;
        if (asked === undefined) await this.backoff(retry, request, signal);
        // The server said when to come back: the whole stack holds back until then (the pause makes
        // the next acquire wait), unless that is longer than we may wait or than the poll has left.
        else if (!this.holdBack(asked, ctx)) return outcome;
        retry++;
        continue;
      }
      return outcome;
    }
  }

  /** The CMDB answered a request with something other than a 429: a run of refusals has ended. */
  private accepted(): void {
    this.refusalStreak = 0;
    this.acceptances++;
  }

  /** The wait a Retry-After asks for, in ms, measured against the response's own Date header. */
  private retryAfterMs(reply: Reply): number | undefined {
    const date = reply.headers.date;
    const serverNow = typeof date === 'string' ? Date.parse(date) : Number.NaN;
    // An HTTP-date is the server's clock: read against the exporter's, a CMDB 10 minutes ahead
    // would turn "30 s" into 630 s. Without a readable Date header, our clock is all there is.
    return parseRetryAfter(reply.headers['retry-after'], Number.isNaN(serverNow) ? this.clock.now() : serverNow);
  }

  /**
   * Pauses the whole stack for `askedMs` (at least retries.minDelaySeconds, at most `capMs`,
   * maxRetryAfterSeconds by default). Returns false when the request should not wait for it: asked
   * for longer than the cap, or past the deadline of its poll.
   */
  private holdBack(askedMs: number, ctx: RequestContext, capMs = this.stack.retries.maxRetryAfterSeconds * 1000): boolean {
    const { minDelaySeconds } = this.stack.retries;
    const waitMs = Math.min(Math.max(askedMs, minDelaySeconds * 1000), Math.max(capMs, minDelaySeconds * 1000));
    const now = this.clock.now();
    this.limiter.pause(now + waitMs);
    // Visible: a paused stack sends nothing, and its endpoints go down as their polls run out of time.
    this.ins.rateLimitPausedUntil.set({ stack: this.stack.name }, this.pausedUntil() ?? 0);
    if (askedMs > capMs) return false;
    const deadline = deadlineOf(ctx);
    return deadline === undefined || now + waitMs < deadline;
  }

  /** Waits as a 429 asks (a pause of the stack), or throws when we may not wait that long. */
  private async afterTooManyRequests(reply: Reply, refusals: number, sentAt: number, request: string, ctx: RequestContext): Promise<void> {
    const { minDelaySeconds, maxDelaySeconds, maxRetryAfterSeconds } = this.stack.retries;
    const asked = this.retryAfterMs(reply);
    let waitMs: number;
    if (asked !== undefined) {
      waitMs = asked;
    } else {
      // No word from the server: the whole stack holds back on a pause that doubles with every
      // refusal in a row. A 429 to a request that left before the current pause began is the same
      // refusal seen again (requests in flight together), not a new one.
      if (sentAt >= this.refusalPauseSetAt) {
        this.refusalStreak++;
        this.refusalPauseSetAt = this.clock.now();
      }
      const minMs = minDelaySeconds * 1000;
      waitMs = Math.min(Math.max(minMs, maxDelaySeconds * 1000), minMs * 2 ** Math.max(0, this.refusalStreak - 1));
    }
    // Our own pause is bounded by maxDelaySeconds already; only the server's word meets maxRetryAfterSeconds.
    const fits = asked !== undefined ? this.holdBack(waitMs, ctx) : this.holdBack(waitMs, ctx, waitMs);
    if (asked !== undefined && asked > maxRetryAfterSeconds * 1000) {
      throw new CmdbRateLimitedError(
        request,
        `429 Too Many Requests: Retry-After ${Math.ceil(asked / 1000)}s is above retries.maxRetryAfterSeconds (${maxRetryAfterSeconds}s)`,
      );
    }
    if (!fits) {
      throw new CmdbRateLimitedError(request, `429 Too Many Requests: the ${Math.ceil(waitMs / 1000)}s wait it asks for does not fit in what is left of the poll`);
    }
    // A request of a poll waits as long as the poll's deadline allows; one without (the token fetch
    // several polls share, a request outside the scheduler) spends a retry per refusal as before.
    if (deadlineOf(ctx) === undefined) {
      if (refusals > this.stack.retries.max) throw new CmdbRateLimitedError(request, `429 Too Many Requests after ${this.stack.retries.max} retries`);
    } else if (refusals >= MAX_REFUSALS) {
      throw new CmdbRateLimitedError(request, `429 Too Many Requests ${refusals} times in a row`);
    }
    if (ctx.signal?.aborted) throw new CmdbAbortedError(request);
    // The pause makes the next acquire wait (counted as rate-limit wait).
  }

  private async backoff(retry: number, request: string, signal?: AbortSignal): Promise<void> {
    const waiting = eitherSignal(this.limiter.stopped, signal);
    try {
      await this.clock.sleep(backoffDelayMs(retry, this.stack.retries, this.random), waiting.signal);
    } catch {
      throw new CmdbAbortedError(request);
    } finally {
      waiting.dispose();
    }
  }

  private async once<T>(
    ex: Exchange,
    target: { origin: string; path: string },
    request: string,
    decode: Decoder<T>,
    signal: AbortSignal | undefined,
    attemptNumber: number,
    sent: { at: number },
  ): Promise<Outcome<T>> {
    if (signal?.aborted) throw new CmdbAbortedError(request);
    const labels = { stack: this.stack.name, endpoint: ex.endpoint };
    let release: () => void;
    const queued = performance.now();
    try {
      release = await this.limiter.acquire(signal);
    } catch {
      throw new CmdbAbortedError(request);
    }
    const started = performance.now();
    sent.at = this.clock.now();
    let outcome: RequestOutcome | 'aborted' = 'network';
    let bytes: number | undefined;
    let decoded: number | undefined;
    // A request of the chain left and its answer is not counted yet (a redirect hop counts its own).
    let unanswered = false;
    try {
      const reply = await attempt(
        { method: ex.method, ...target, headers: ex.headers, body: ex.body, request },
        {
          dispatcher: this.dispatcher,
          timeoutSeconds: this.stack.timeoutSeconds,
          connectTimeoutSeconds: this.stack.connectTimeoutSeconds,
          ...capOf(bodyCap(ex.endpoint, this.stack.maxResponseBytes)),
          signal,
          onSend: () => {
            unanswered = true;
          },
          onRedirect: async (status, from, to) => {
            // The answered hop was a request like any other: counted, and the next one is charged.
            this.ins.requests.inc({ ...labels, outcome: statusOutcome(status) });
            unanswered = false;
            this.logger.debug({ endpoint: ex.endpoint, status, from, to }, 'followed redirect');
            try {
              await this.limiter.charge(signal);
            } catch {
              throw new CmdbAbortedError(request);
            }
          },
        },
      );
      outcome = statusOutcome(reply.status);
      // What came over the wire: a compressed answer counts its compressed size.
      bytes = reply.wireBytes ?? reply.body.length;
      decoded = reply.body.length;
      this.ins.responseBytes.inc(labels, bytes);
      if (reply.status < 200 || reply.status >= 300) return { ok: false, reply };
      const value = await decode(reply, request);
      if (this.logger.isLevelEnabled('trace')) this.logger.trace({ endpoint: ex.endpoint, request, shape: shapeOf(value) }, 'response shape');
      return { ok: true, status: reply.status, value };
    } catch (err) {
      outcome = err instanceof CmdbAbortedError ? 'aborted' : requestOutcome(err);
      throw err;
    } finally {
      release();
      // A shutdown is not an outcome of the CMDB.
      if (outcome !== 'aborted') {
        const seconds = (performance.now() - started) / 1000;
        this.ins.requestDuration.observe(labels, seconds);
        // Counted only when it left: a hop whose deadline passed while it waited for the budget did not.
        if (unanswered) {
          this.ins.requests.inc({ ...labels, outcome });
          this.onRequest?.(outcome);
        }
        // One line per request at debug: what was asked and what came back, never a header or a value.
        this.logger.debug(
          {
            endpoint: ex.endpoint,
            request,
            ...pageOf(ex.query),
            outcome,
            durationSeconds: round(seconds),
            bytes,
            ...(decoded !== undefined && decoded !== bytes ? { decodedBytes: decoded } : {}),
            attempt: attemptNumber,
            budgetWaitSeconds: round((started - queued) / 1000),
          },
          'CMDB request',
        );
      }
    }
  }
}

const capOf = (cap: BodyCap) => ({ maxResponseBytes: cap.bytes, capName: cap.name });

const round = (seconds: number): number => Math.round(seconds * 1000) / 1000;

/** The page asked for, from the query (`page=2&size=50`); the id of a change-history query is left out. */
function pageOf(query: string | undefined): { page?: number } {
  const page = query === undefined ? null : new URLSearchParams(query).get('page');
  return page === null ? {} : { page: Number(page) };
}

/**
 * The shape of a validated response for trace logs: keys, types and list lengths, two levels deep,
 * never a value (values may hold host names, messages and credentials).
 */
export function shapeOf(value: unknown, depth = 0): unknown {
  if (Array.isArray(value)) return depth >= 2 || value.length === 0 ? `array(${value.length})` : { [`array(${value.length})`]: shapeOf(value[0], depth + 1) };
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  if (depth >= 2) return `object(${Object.keys(value).length} keys)`;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shapeOf(v, depth + 1)]));
}

/** Statuses whose Retry-After is honoured besides 429: the server says when it will be back. */
const RETRY_AFTER_STATUSES = new Set([502, 503, 504]);

/** 429s in a row after which one request gives up (its poll's deadline usually ends it sooner). */
export const MAX_REFUSALS = 20;

function isRetryable(err: unknown): boolean {
  if (err instanceof CmdbTimeoutError) return true;
  // A 2xx cut short but correctly framed (not JSON) is a transport fault; a schema mismatch is not.
  if (err instanceof CmdbInvalidBodyError) return err.notJson;
  return err instanceof CmdbNetworkError && isRetryableNetworkError(err);
}
