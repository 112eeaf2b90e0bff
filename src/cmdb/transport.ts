/**
 * A logical request to the CMDB: through the stack's limiter (limiter.ts), one attempt at a time
 * (attempt.ts), each reported as a request event, and after each what policy.ts decides. Knows
 * nothing of tokens, paths or readers; the client builds the exchange.
 */
import type { Dispatcher } from 'undici';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import { CmdbAbortedError, CmdbInvalidBodyError, CmdbNetworkError, CmdbRateLimitedError, CmdbTimeoutError } from '../errors.js';
import type { EndpointName } from '../api/endpoints.js';
import { deadlineOf, type RequestContext } from '../api/request-context.js';
import { eitherSignal } from '../signals.js';
import { attempt, isRetryableNetworkError, type Reply } from './attempt.js';
import { AttemptTrace } from './attempt-trace.js';
import { bodyCap } from './body.js';
import { withFirstByte } from './first-byte.js';
import type { BudgetState } from './budget.js';
import { StackLimiter } from './limiter.js';
import type { Clock } from './clock.js';
import type { RoadEvents } from './events.js';
import { Pauses, pauseKeyOf, type Pause } from './pauses.js';
import { decide, NO_COUNTS, type Attempted, type Decision, type RequestCounts } from './policy.js';

export interface Exchange {
  endpoint: EndpointName;
  method: 'GET' | 'POST';
  /** Path from the endpoint table or TOKEN_PATH, ids already encoded. */
  path: string;
  /** Query string without '?', values already percent-encoded. */
  query?: string;
  headers: Record<string, string>;
  body?: string;
  /** Retry an attempt that timed out (default true); off for connector pages, whose reader asks at half the size instead. */
  retryTimeouts?: boolean;
  /** The answer's head must come within this (s), else the attempt times out (a token request's); default only timeoutSeconds for all of it. */
  firstByteSeconds?: number;
}

/** Turns a 2xx into the caller's value (connector pages: in a worker), inside the attempt: its failure (invalid_body) is the request's outcome. */
export type Decoder<T> = (reply: Reply, request: string) => T | Promise<T>;

/** A 2xx decoded by the caller's `decode`, or the final non-2xx reply (after any retries). */
export type Outcome<T> = { ok: true; status: number; value: T } | { ok: false; reply: Reply };

export interface TransportOptions {
  stack: StackConfig;
  /** The budget's requests a minute (the client's pace: CmdbClientOptions.requestsPerMinute). */
  ratePerMinute: number;
  dispatcher: Dispatcher;
  clock: Clock;
  random: () => number;
  events: RoadEvents;
  logger: Logger;
  /** Seconds waited for the budget or a pause (cmdb_rate_limit_wait_seconds_total). */
  onWait: (seconds: number) => void;
  /** The budget the stack's previous runtime left (a reload must not start with a full bucket). */
  budget?: BudgetState;
}

export function requestName(method: string, path: string): string {
  return `${method} ${path}`;
}

/** What one attempt came to: a decoded 2xx, another answer, or a failure before one. */
type Tried<T> = { outcome: Outcome<T>; error?: undefined; sentAt: number } | { outcome?: undefined; error: unknown; sentAt: number };

export class Transport {
  readonly pauses: Pauses;
  private readonly limiter: StackLimiter;
  private stack: StackConfig;
  private dispatcher: Dispatcher;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly events: RoadEvents;
  private readonly logger: Logger;

  constructor(opts: TransportOptions) {
    this.stack = opts.stack;
    this.dispatcher = withFirstByte(opts.dispatcher);
    this.clock = opts.clock;
    this.random = opts.random;
    this.events = opts.events;
    this.logger = opts.logger;
    this.pauses = new Pauses(opts.clock);
    this.limiter = new StackLimiter({
      ratePerMinute: opts.ratePerMinute,
      maxConcurrency: opts.stack.maxConcurrency,
      clock: opts.clock,
      pauses: this.pauses,
      inherited: opts.budget,
      onWait: opts.onWait,
      onGrant: (plannedAt, at) => opts.events.grants.emit({ plannedAt, at }),
    });
  }

  /** The stack's settings changed on a reload that keeps the runtime: later attempts use them. */
  reconfigure(stack: StackConfig, dispatcher: Dispatcher, ratePerMinute: number): void {
    this.stack = stack;
    this.dispatcher = withFirstByte(dispatcher);
    this.limiter.reconfigure(ratePerMinute, stack.maxConcurrency);
  }

  /** What this stack's budget has spent, for its next runtime. */
  budgetState(): BudgetState {
    return this.limiter.state();
  }

  /** The stack stops: waits for the budget, a pause, a slot or a retry's back-off end at once (StackLimiter.stopWaiting). */
  stopWaiting(): void {
    this.limiter.stopWaiting();
  }

  /** Ends every pause of the stack (on reload). */
  resume(): void {
    this.pauses.resume();
    this.events.pauses.emit({ began: false });
  }

  /** Sends `ex` with the retries, waits and pauses the policy decides. `decode` runs on a 2xx inside the attempt. */
  async send<T>(ex: Exchange, decode: Decoder<T>, ctx: RequestContext = {}): Promise<Outcome<T>> {
    const request = requestName(ex.method, ex.path);
    let counts: RequestCounts = NO_COUNTS;
    for (let attemptNumber = 1; ; attemptNumber++) {
      const answersBefore = this.pauses.answers;
      const tried = await this.once(ex, request, decode, ctx, attemptNumber);
      if (tried.error instanceof CmdbAbortedError) throw tried.error;
      const attempted = attemptedOf(tried);
      const decision = decide({
        endpoint: ex.endpoint,
        attempted,
        counts,
        stack: this.pauses.view(ex.endpoint, tried.sentAt, answersBefore),
        now: this.clock.now(),
        deadline: deadlineOf(ctx),
        retryTimeouts: ex.retryTimeouts !== false,
        retries: this.stack.retries,
        jitter: this.random(),
      });
      this.pauses.record(attempted.kind === 'answer' && attempted.status !== 429, decision.refusalStreak);
      if (decision.pause) this.pause(decision, attempted, ex, request);
      switch (decision.next) {
        case 'return':
          if (tried.outcome) return tried.outcome;
          throw tried.error;
        case 'rethrow':
          throw tried.error;
        case 'give_up':
          throw new CmdbRateLimitedError(request, decision.reason ?? '429 Too Many Requests');
      }
      counts = decision.counts;
      if (decision.waitMs !== undefined && decision.waitMs > 0) await this.backoff(decision.waitMs, request, ctx.signal);
      if (ctx.beforeRetry !== undefined) await ctx.beforeRetry();
      if (ctx.signal?.aborted) throw new CmdbAbortedError(request);
    }
  }

  private pause(decision: Decision, attempted: Attempted, ex: Exchange, request: string): void {
    const { scope, until } = decision.pause as NonNullable<Decision['pause']>;
    const pause: Pause = {
      scope,
      until,
      endpoint: ex.endpoint,
      request,
      ...(scope === 'group' ? { group: pauseKeyOf(ex.endpoint) } : {}),
      ...(attempted.kind === 'answer' ? { status: attempted.status } : {}),
    };
    const began = this.pauses.set(pause);
    this.events.pauses.emit({ pause, began });
  }

  private async backoff(ms: number, request: string, signal?: AbortSignal): Promise<void> {
    const waiting = eitherSignal(this.limiter.stopped, signal);
    try {
      await this.clock.sleep(ms, waiting.signal);
    } catch {
      throw new CmdbAbortedError(request);
    } finally {
      waiting.dispose();
    }
  }

  /** One attempt: through the limiter, out, back; reported as request events. Never throws but for an abort before it left. */
  private async once<T>(ex: Exchange, request: string, decode: Decoder<T>, ctx: RequestContext, attemptNumber: number): Promise<Tried<T>> {
    const { signal } = ctx;
    if (signal?.aborted) return { error: new CmdbAbortedError(request), sentAt: this.clock.now() };
    let admitted;
    try {
      admitted = await this.limiter.acquire(pauseKeyOf(ex.endpoint), signal);
    } catch {
      return { error: new CmdbAbortedError(request), sentAt: this.clock.now() };
    }
    const trace = new AttemptTrace({ endpoint: ex.endpoint, method: ex.method, request, ...pageOf(ex.query), attempt: attemptNumber, waitSeconds: admitted.waitedMs / 1000 }, admitted, this.events, this.clock);
    const cap = bodyCap(ex.endpoint, this.stack.maxResponseBytes);
    try {
      const reply = await attempt(
        { method: ex.method, ...this.target(ex), headers: ex.headers, body: ex.body, request },
        {
          dispatcher: this.dispatcher,
          timeoutSeconds: this.stack.timeoutSeconds,
          connectTimeoutSeconds: this.stack.connectTimeoutSeconds,
          ...(ex.firstByteSeconds !== undefined && ex.firstByteSeconds < this.stack.timeoutSeconds ? { firstByteSeconds: ex.firstByteSeconds } : {}),
          maxResponseBytes: cap.bytes,
          capName: cap.name,
          signal,
          onSend: () => trace.leaves(),
          onFirstByte: () => trace.firstByte(),
          onRedirect: async (status) => {
            this.logger.debug({ endpoint: ex.endpoint, status }, 'followed redirect');
            await trace.redirected(status, () => this.limiter.charge(signal));
          },
        },
      );
      trace.replied(reply);
      if (reply.status < 200 || reply.status >= 300) return { outcome: { ok: false, reply }, sentAt: trace.sentAt };
      const value = await decode(reply, request);
      if (this.logger.isLevelEnabled('trace')) this.logger.trace({ endpoint: ex.endpoint, request, shape: shapeOf(value) }, 'response shape');
      return { outcome: { ok: true, status: reply.status, value }, sentAt: trace.sentAt };
    } catch (err) {
      trace.failed(err);
      return { error: err, sentAt: trace.sentAt };
    } finally {
      trace.end();
    }
  }

  /** Where the exchange goes: only the origin goes through the URL parser; the path is sent as built (see AttemptRequest.path). */
  private target(ex: Exchange): { origin: string; path: string } {
    const base = new URL(this.stack.baseUrl);
    return { origin: base.origin, path: `${base.pathname.replace(/\/+$/, '')}${ex.path}${ex.query ? `?${ex.query}` : ''}` };
  }
}

/** What the policy reads of an attempt. */
function attemptedOf(tried: Tried<unknown>): Attempted {
  if (tried.outcome?.ok) return { kind: 'answer', status: tried.outcome.status };
  if (tried.outcome) {
    const { status, headers } = tried.outcome.reply;
    const header = (name: string) => {
      const v = headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const retryAfter = header('retry-after');
    const date = header('date');
    return { kind: 'answer', status, ...(retryAfter === undefined ? {} : { retryAfter }), ...(date === undefined ? {} : { date }) };
  }
  const err = tried.error;
  if (err instanceof CmdbTimeoutError) return { kind: 'failure', failure: 'timeout' };
  // A 2xx cut short but correctly framed (not JSON) is a transport fault; a schema mismatch is not.
  if (err instanceof CmdbInvalidBodyError) return { kind: 'failure', failure: err.notJson ? 'not_json' : 'final' };
  if (err instanceof CmdbNetworkError && isRetryableNetworkError(err)) return { kind: 'failure', failure: 'network' };
  return { kind: 'failure', failure: 'final' };
}

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
