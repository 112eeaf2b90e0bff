/**
 * The CMDB client of one stack, the only code that speaks HTTP to the CMDB: the token, the path
 * spellings that answered, and `get`/`post` through the stack's transport (transport.ts). How a
 * resource is read is its reader's (readers/). Failures are CmdbError subclasses, never logged here:
 * the caller (the scheduler's runner, the backfill) logs and counts them.
 */
import type { Dispatcher } from 'undici';
import type { StackConfig } from '../config/types.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import { CmdbAbortedError, CmdbHttpError, CmdbTokensTakenError, CmdbUnauthorizedError } from '../errors.js';
import { descriptor, pathsOf, type DataEndpoint } from '../api/endpoints.js';
import type { RequestContext } from '../api/request-context.js';
import type { Reply } from './attempt.js';
import { FetchedToken, PreIssuedToken, TAKEN_RENEWALS, jsonHeaders, type TokenProvider, type TokenState } from './auth.js';
import type { BudgetState } from './budget.js';
import { realClock, type Clock } from './clock.js';
import { createDispatcher } from './dispatcher.js';
import { RoadEvents } from './events.js';
import { observeRoad } from './observers.js';
import type { Pause } from './pauses.js';
import type { PlanSeen } from './plan.js';
import { CLIENT_STATE_VERSION, type ClientState } from './client-state.js';
import { Transport, requestName, type Decoder, type Exchange, type Outcome } from './transport.js';

export interface CmdbClientOptions {
  stack: StackConfig;
  /** The pace, requests a minute (the budget; kept on a reload): default the stack's rateLimitPerMinute, the daemon's; a backfill's is backfillRequestsPerMinute. */
  requestsPerMinute?: number;
  instruments: Instruments;
  /** Already a child bound to { stack }. */
  logger: Logger;
  /** Every token fetched is registered here so it is scrubbed from all output. */
  scrubber: SecretScrubber;
  /** Default: createDispatcher(stack), closed by close(). A dispatcher passed in is left open. */
  dispatcher?: Dispatcher;
  clock?: Clock;
  /** Jitter source, default Math.random. */
  random?: () => number;
  /** The request budget the stack's previous runtime left (on reload); default a full bucket. */
  budget?: BudgetState;
  /** What the stack's previous runtime knew of the service (on reload): see CmdbClient.handOver. */
  carried?: ClientCarry;
  /**
   * New tokens one request asks for after 401s (auth.ts). Default PATIENT_TOKEN_RENEWALS: a backfill
   * reads each unit once, so it waits out another process that takes the tokens. The daemon's
   * POLL_TOKEN_RENEWALS: its next poll asks again, and an endpoint that answers 401 to every token must
   * read down within its poll, not hold every other endpoint's requests through a minute of token requests.
   */
  tokenRenewalsPerRequest?: number;
  /** A backfill's token requests: their answer must start within this (seconds), not asked again after a timeout (auth.ts). */
  tokenFirstByteSeconds?: number;
  /** Told of each token granted: the daemon keeps it in --storage.path for a backfill with the same client id (src/persist/token-file.ts). */
  onToken?: (token: string) => void;
  /** The tokens a backfill borrows from a daemon with the same client id (src/backfill/borrowed-token.ts), given the client's own to fall back on. */
  tokens?: (own: TokenProvider) => TokenProvider;
}

/** A backfill's renewals per request: enough for the token streak to end first (auth.ts TAKEN_RENEWALS). */
export const PATIENT_TOKEN_RENEWALS = TAKEN_RENEWALS + 1;
/** The daemon's renewals per request: one at once, one after the first back-off. */
export const POLL_TOKEN_RENEWALS = 2;

/**
 * What one runtime's client hands to the next on reload (src/stacks.ts decides what may pass), or
 * what an earlier process kept of it (--storage.path: spellings and pauses, never a token).
 */
export interface ClientCarry {
  /** The fetched token and the client-id key spelling that worked. */
  readonly token?: TokenState;
  /** The path spellings that answered 2xx. */
  readonly spellings?: ReadonlyMap<DataEndpoint, string>;
  /** Pauses an earlier process was told of (a restart; a reload ends them): see restorePauses. */
  readonly pauses?: readonly Pause[];
}

/** One request of an endpoint: which one, its id, its query, how its 2xx is read, and whether a timeout is asked again. */
export interface CmdbRequest<T> extends Pick<Exchange, 'retryTimeouts'> {
  readonly endpoint: DataEndpoint;
  /** The id of a per-id endpoint: a path segment, or `?id=` where the descriptor says so. */
  readonly id?: string;
  /** More of the query string, already percent-encoded (`page=0&size=100`, `date=2026-07-27`). */
  readonly query?: string;
  readonly decode: Decoder<T>;
}

/** A 2xx, decoded; or a 404 on the spelling that applies (what it means is the reader's to say). */
export type Answer<T> = { readonly found: true; readonly value: T } | { readonly found: false; readonly error: CmdbHttpError };

export class CmdbClient {
  /** Request, read and pause events of this stack's road (events.ts). */
  readonly events = new RoadEvents();
  private stack: StackConfig;
  private readonly logger: Logger;
  private readonly transport: Transport;
  private readonly tokens: TokenProvider;
  /** The client's own fetched token provider, when its credentials are a client id and secret. */
  private readonly fetched: FetchedToken | undefined;
  private dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly retired: Dispatcher[] = [];
  private readonly lifetime = new AbortController();
  private closing: Promise<void> | undefined;
  readonly clock: Clock;
  /** The path spelling that answered 2xx, per endpoint with more than one (/actions or /action; change history with or without `metadata`). */
  private readonly spellings = new Map<DataEndpoint, string>();
  private readonly renewalsPerRequest: number;
  private readonly pace: number | undefined;

  constructor(opts: CmdbClientOptions) {
    const { stack, instruments, logger, scrubber } = opts;
    this.stack = stack;
    this.pace = opts.requestsPerMinute;
    this.renewalsPerRequest = opts.tokenRenewalsPerRequest ?? PATIENT_TOKEN_RENEWALS;
    this.logger = logger;
    this.clock = opts.clock ?? realClock;
    this.ownsDispatcher = !opts.dispatcher;
    const carried = opts.carried ?? {};
    for (const [endpoint, path] of carried.spellings ?? []) this.spellings.set(endpoint, path);
    this.dispatcher = opts.dispatcher ?? createDispatcher(stack);
    warnInsecure(stack, logger);
    const pace = this.pace ?? stack.rateLimitPerMinute;
    instruments.rateLimitBudget.set({ stack: stack.name }, pace);
    observeRoad(this.events, instruments, stack.name, logger);
    const random = opts.random ?? Math.random;
    this.transport = new Transport({
      stack,
      ratePerMinute: pace,
      dispatcher: this.dispatcher,
      clock: this.clock,
      random,
      events: this.events,
      logger,
      onWait: (seconds) => instruments.rateLimitWait.inc({ stack: stack.name }, seconds),
      budget: opts.budget,
    });
    // The configured secret or token is registered with the scrubber where the config is read (src/app.ts); fetched ones by the provider.
    const own =
      stack.auth.kind === 'client'
        ? new FetchedToken(
            stack.auth,
            {
              settings: () => this.stack,
              transport: this.transport,
              instruments,
              scrubber,
              lifetime: this.lifetime.signal,
              logger,
              clock: this.clock,
              random,
              ...(opts.tokenFirstByteSeconds !== undefined ? { firstByteSeconds: opts.tokenFirstByteSeconds } : {}),
              ...(opts.onToken ? { granted: opts.onToken } : {}),
            },
            carried.token,
          )
        : new PreIssuedToken(stack.auth, { scrubber, logger, stack: stack.name });
    this.fetched = own instanceof FetchedToken ? own : undefined;
    this.tokens = opts.tokens && own instanceof FetchedToken ? opts.tokens(own) : own;
    if (carried.pauses) this.restorePauses(carried.pauses);
  }

  get settings(): StackConfig {
    return this.stack;
  }

  /**
   * A reload changed settings that leave the service, the credentials and the paging as they were:
   * later requests use the new ones. A change baked into the dispatcher (TLS, proxy, timeouts,
   * connections) gets a new one; the old one closes once its requests in flight are done.
   */
  reconfigure(stack: StackConfig, instruments: Instruments): void {
    const before = this.stack;
    this.stack = stack;
    if (this.ownsDispatcher && dispatcherKey(before) !== dispatcherKey(stack)) {
      const old = this.dispatcher;
      this.dispatcher = createDispatcher(stack);
      this.retired.push(old);
      void old.close().catch(() => undefined);
    }
    if (before.tls.insecureSkipVerify !== stack.tls.insecureSkipVerify) warnInsecure(stack, this.logger);
    const pace = this.pace ?? stack.rateLimitPerMinute;
    instruments.rateLimitBudget.set({ stack: stack.name }, pace);
    this.transport.reconfigure(stack, this.dispatcher, pace);
  }

  /** GET one endpoint's resource (`req.id`, `req.query`), decoded. */
  get<T>(req: CmdbRequest<T>, ctx: RequestContext = {}): Promise<Answer<T>> {
    return this.lookup('GET', req, undefined, ctx);
  }

  /** POST a JSON body to an endpoint, the answer decoded (the data query: POST /CMDB/v2/data/cmdb). */
  post<T>(req: CmdbRequest<T>, body: unknown, ctx: RequestContext = {}): Promise<Answer<T>> {
    return this.lookup('POST', req, JSON.stringify(body), ctx);
  }

  /** What the stack's request budget has spent, handed to its next runtime on reload. */
  budgetState(): BudgetState {
    return this.transport.budgetState();
  }

  /**
   * What this client learned of the service that still holds under `next`, the stack's configuration
   * on reload (call after close()): nothing passes to another base URL, the token only with the same credentials.
   */
  handOver(next: StackConfig): ClientCarry {
    if (!sameService(this.stack, next)) return {};
    const token = sameCredentials(this.stack, next) && this.fetched ? this.fetched.state() : undefined;
    return { spellings: new Map(this.spellings), ...(token ? { token } : {}) };
  }

  /** What a restart keeps of this client (--storage.path, client-state.ts), never a token; `seen` is PollPlan.seen(). */
  exportState(seen: PlanSeen): ClientState {
    return { v: CLIENT_STATE_VERSION, spellings: [...this.spellings], seen, pauses: this.pauses() };
  }

  /** Pauses an earlier process was told of and that have not ended: waited out, and reported as when set. */
  restorePauses(pauses: readonly Pause[]): void {
    const now = this.clock.now();
    for (const pause of pauses) {
      if (pause.until <= now) continue;
      const began = this.transport.pauses.set(pause);
      this.events.pauses.emit({ pause, began });
    }
  }

  /** Ends every pause of this stack at once (a reload asks the CMDB again). */
  resumeAfterRateLimit(): void {
    this.transport.resume();
  }

  /** Unix seconds when the stack's pause ends; undefined while the stack is not paused. */
  rateLimitPausedUntil(): number | undefined {
    const p = this.transport.pauses.stack();
    return p ? p.until / 1000 : undefined;
  }

  /** The pauses in force: the stack's and each group's (the status page). */
  pauses(): Pause[] {
    const stack = this.transport.pauses.stack();
    return [...(stack ? [stack] : []), ...this.transport.pauses.groups()];
  }

  /** True while a pre-issued token is being rejected with 401. */
  get unauthorized(): boolean {
    return this.tokens.unauthorized;
  }

  /**
   * The stack is stopping: requests waiting for the budget, a pause, a slot or a retry's back-off give
   * up (CmdbAbortedError, no failure); those sent go on. close() follows once the polls have ended.
   */
  stopWaiting(): void {
    this.transport.stopWaiting();
  }

  /** Ends a shared token fetch and closes the dispatchers the client made. Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.lifetime.abort();
      if (this.ownsDispatcher) await Promise.all([this.dispatcher, ...this.retired].map((d) => d.close().catch(() => undefined)));
    })();
    return this.closing;
  }

  /**
   * Asks the first spelling that answers 2xx and remembers it. Once one is remembered only it is
   * asked, and its 404 is returned as not found. Before one is remembered a 404 or 403 moves on to
   * the next spelling; a 403 on every spelling throws 403. Any other status throws.
   */
  private async lookup<T>(method: 'GET' | 'POST', req: CmdbRequest<T>, body: string | undefined, ctx: RequestContext): Promise<Answer<T>> {
    const { endpoint, id } = req;
    const d = descriptor(endpoint);
    const paths = pathsOf(endpoint, id);
    const idQuery = 'idInQuery' in d && d.idInQuery && id !== undefined ? `id=${encodeURIComponent(id)}` : undefined;
    const query = [idQuery, req.query].filter((q) => q !== undefined).join('&') || undefined;
    const known = this.spellings.get(endpoint);
    const candidates = known ? [known] : paths;
    let notFound: Answer<T> | undefined;
    let forbidden: Reply | undefined;
    for (const path of candidates) {
      const outcome = await this.authorized(method, endpoint, path, query, body, req, ctx);
      if (outcome.ok) {
        // Concurrent first requests (change history of several names) may all get here: log once.
        if (!known && paths.length > 1 && this.spellings.get(endpoint) !== path) {
          this.spellings.set(endpoint, path);
          this.logger.info({ endpoint, path }, 'CMDB path spelling discovered');
        }
        return { found: true, value: outcome.value };
      }
      const status = outcome.reply.status;
      // A 403 on one spelling may only mean that spelling is not the service's (a scoped token is
      // refused on unknown paths too): the other spelling is still tried, as after a 404.
      const tryNext = status === 404 || (status === 403 && !known && paths.length > 1);
      if (!tryNext) throw new CmdbHttpError(requestName(method, path), status, outcome.reply.statusText);
      if (status === 403) forbidden ??= outcome.reply;
      else notFound = { found: false, error: new CmdbHttpError(requestName(method, path), 404, outcome.reply.statusText || 'Not Found') };
    }
    // Every spelling refused: a 403 says more than a 404 on the other spelling.
    if (forbidden) throw new CmdbHttpError(requestName(method, candidates[0] ?? ''), 403, forbidden.statusText);
    return notFound as Answer<T>;
  }

  /** One request with the current token; after a 401, again with a renewed one (auth.ts) while the provider gives one, up to renewalsPerRequest. */
  private async authorized<T>(
    method: 'GET' | 'POST',
    endpoint: DataEndpoint,
    path: string,
    query: string | undefined,
    body: string | undefined,
    req: CmdbRequest<T>,
    ctx: RequestContext,
  ): Promise<Outcome<T>> {
    const { signal } = ctx;
    // Checked before the token: an aborted poll must not start a token fetch either.
    if (signal?.aborted) throw new CmdbAbortedError(requestName(method, path));
    let credential = await this.tokens.current(signal);
    for (let renewals = 0; ; renewals++) {
      const headers = { ...jsonHeaders(this.stack.userAgent), Authorization: `Bearer ${credential.token}` };
      const exchange = { endpoint, method, path, query, headers, body, ...(req.retryTimeouts === false ? { retryTimeouts: false } : {}) };
      const outcome = await this.transport.send(exchange, req.decode, ctx);
      if (outcome.ok) this.tokens.accepted();
      if (outcome.ok || outcome.reply.status !== 401) return outcome;
      const capped = renewals >= this.renewalsPerRequest;
      const next = capped ? undefined : await this.tokens.renew(credential, signal);
      if (!next) {
        this.tokens.refused();
        const request = requestName(method, path);
        if (this.fetched && capped) {
          throw new CmdbUnauthorizedError(
            request,
            `401 Unauthorized, also on the ${renewals} new tokens asked for after it, each refused as soon as the token endpoint granted it: the CMDB refuses this request to the client, or another process with the same client id takes the tokens (a CMDB that keeps one token per client); asked again at the next poll`,
          );
        }
        if (this.fetched) {
          throw new CmdbTokensTakenError(
            request,
            `401 Unauthorized on ${TAKEN_RENEWALS} new tokens in a row, each refused as soon as the token endpoint granted it: another process with the same client id takes them (a CMDB that keeps one token per client); give each process a client id of its own`,
          );
        }
        throw new CmdbUnauthorizedError(request, `401 Unauthorized (${renewals > 0 ? 'still 401 after a new token' : 'the token is not accepted'})`);
      }
      credential = next;
    }
  }
}

/** Only where it means something: an http:// base URL has no certificate to skip. */
function warnInsecure(stack: StackConfig, logger: Logger): void {
  if (!stack.tls.insecureSkipVerify || !stack.baseUrl.startsWith('https:')) return;
  // The origin: the host whose certificate goes unchecked (a base URL carries no credentials: the configuration refuses user:password@).
  logger.warn({ origin: new URL(stack.baseUrl).origin }, 'TLS certificate verification is off for this stack (tls.insecureSkipVerify)');
}

/** The settings a dispatcher is made from (dispatcher.ts): a change of any needs a new one. */
function dispatcherKey(stack: StackConfig): string {
  const { tls, proxyUrl, connectTimeoutSeconds, timeoutSeconds, maxConcurrency } = stack;
  return JSON.stringify({ tls, proxyUrl, connectTimeoutSeconds, timeoutSeconds, maxConcurrency });
}

/** The same CMDB: the same base URL (user info, path and all). */
export function sameService(a: StackConfig, b: StackConfig): boolean {
  return a.baseUrl === b.baseUrl;
}

/** The same service asked with the same credentials (client id, secret and its key, or the token). */
export function sameCredentials(a: StackConfig, b: StackConfig): boolean {
  return sameService(a, b) && JSON.stringify(a.auth) === JSON.stringify(b.auth);
}
