/**
 * A logical request to the CMDB: the stack's rate budget and in-flight cap, retries with back-off
 * for network errors, timeouts, 5xx and 429 (honouring Retry-After), and the request metrics of
 * every attempt. Knows nothing about tokens or paths; the client builds the exchange.
 */
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { StackConfig } from '../config/types.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Logger } from '../logger.js';
import {
  CmdbAbortedError,
  CmdbError,
  CmdbNetworkError,
  CmdbRateLimitedError,
  CmdbTimeoutError,
  statusOutcome,
  type FailureOutcome,
} from '../errors.js';
import type { EndpointName } from '../api/endpoints.js';
import { attempt, isRetryableNetworkError, type Reply } from './attempt.js';
import { backoffDelayMs, parseRetryAfter } from './backoff.js';
import { bodyCap, type BodyCap } from './body.js';
import { StackLimiter, type BudgetState } from './budget.js';
import type { Clock } from './clock.js';

export interface Exchange {
  endpoint: EndpointName;
  method: 'GET' | 'POST';
  /** Path from PATHS / TOKEN_PATH, ids already encoded. */
  path: string;
  /** Query string without '?', values already percent-encoded. */
  query?: string;
  headers: Record<string, string>;
  body?: string;
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

  constructor(opts: TransportOptions) {
    this.stack = opts.stack;
    this.ins = opts.instruments;
    this.logger = opts.logger;
    this.dispatcher = opts.dispatcher;
    this.clock = opts.clock;
    this.random = opts.random;
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

  /** Sends `ex` with retries. `decode` runs on a 2xx inside the attempt, so its failure is that attempt's outcome. */
  async send<T>(ex: Exchange, decode: Decoder<T>, signal?: AbortSignal): Promise<Outcome<T>> {
    const request = requestName(ex.method, ex.path);
    const base = new URL(this.stack.baseUrl);
    // Only the origin goes through the URL parser; the path is sent as built (see AttemptRequest.path).
    const target = { origin: base.origin, path: `${base.pathname.replace(/\/+$/, '')}${ex.path}${ex.query ? `?${ex.query}` : ''}` };
    const { max } = this.stack.retries;
    for (let retry = 0; ; retry++) {
      let outcome: Outcome<T>;
      try {
        outcome = await this.once(ex, target, request, decode, signal, retry + 1);
      } catch (err) {
        if (retry >= max || !isRetryable(err)) throw err;
        await this.backoff(retry, request, signal);
        continue;
      }
      if (outcome.ok) return outcome;
      const { status } = outcome.reply;
      if (status === 429) {
        await this.afterTooManyRequests(outcome.reply, retry, request, signal);
        continue;
      }
      if (status >= 500 && retry < max) {
        await this.backoff(retry, request, signal);
        continue;
      }
      return outcome;
    }
  }

  /** Waits as a 429 asks, or throws when we may not wait that long or have no retries left. */
  private async afterTooManyRequests(reply: Reply, retry: number, request: string, signal?: AbortSignal): Promise<void> {
    const { max, maxRetryAfterSeconds } = this.stack.retries;
    const waitMs = parseRetryAfter(reply.headers['retry-after'], this.clock.now());
    if (waitMs !== undefined) {
      // The whole stack holds back: the server would refuse its other requests too. Never for
      // longer than maxRetryAfterSeconds: a Retry-After of years must not stop a stack for good,
      // and a bogus one on a single endpoint holds the others back for that long at most.
      this.limiter.pause(this.clock.now() + Math.min(waitMs, maxRetryAfterSeconds * 1000));
      // Visible: a paused stack sends nothing, and its endpoints go down as their polls run out of time.
      this.ins.rateLimitPausedUntil.set({ stack: this.stack.name }, this.pausedUntil() ?? 0);
      if (waitMs > maxRetryAfterSeconds * 1000) {
        throw new CmdbRateLimitedError(
          request,
          `429 Too Many Requests: Retry-After ${Math.ceil(waitMs / 1000)}s is above retries.maxRetryAfterSeconds (${maxRetryAfterSeconds}s)`,
        );
      }
    }
    if (retry >= max) throw new CmdbRateLimitedError(request, `429 Too Many Requests after ${max} retries`);
    // With Retry-After the pause makes the next acquire wait (counted as rate-limit wait).
    if (waitMs === undefined) await this.backoff(retry, request, signal);
  }

  private async backoff(retry: number, request: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.clock.sleep(backoffDelayMs(retry, this.stack.retries, this.random), signal);
    } catch {
      throw new CmdbAbortedError(request);
    }
  }

  private async once<T>(
    ex: Exchange,
    target: { origin: string; path: string },
    request: string,
    decode: Decoder<T>,
    signal: AbortSignal | undefined,
    attemptNumber: number,
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
    let outcome: FailureOutcome | 'aborted' = 'network';
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
      outcome = err instanceof CmdbError ? err.outcome : 'network';
      throw err;
    } finally {
      release();
      // A shutdown is not an outcome of the CMDB.
      if (outcome !== 'aborted') {
        const seconds = (performance.now() - started) / 1000;
        this.ins.requestDuration.observe(labels, seconds);
        // Counted only when it left: a hop whose deadline passed while it waited for the budget did not.
        if (unanswered) this.ins.requests.inc({ ...labels, outcome });
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

function isRetryable(err: unknown): boolean {
  if (err instanceof CmdbTimeoutError) return true;
  return err instanceof CmdbNetworkError && isRetryableNetworkError(err);
}
