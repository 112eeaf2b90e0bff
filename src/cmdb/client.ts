/**
 * The CMDB client of one stack: the only code in the exporter that speaks HTTP to the CMDB.
 * Every method returns validated data or throws a CmdbError subclass (src/errors.ts). Failures are
 * not logged here: the scheduler's runner decides how a failure is logged and counted.
 */
import type { Dispatcher } from 'undici';
import type { StackConfig } from '../config/types.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import { CmdbAbortedError, CmdbHttpError, CmdbInvalidBodyError, CmdbTimeoutError, CmdbUnauthorizedError } from '../errors.js';
import { ConnectorPageSchema, MetricsRecordSchema, validate, type ConnectorRun, type MetricsRecord } from '../api/schemas.js';
import { ConnectorHistoryReader, INCREMENTAL_SORT, type HistoryIo, type HistoryPage, type HistoryResult, type ScanProgress } from './connector-history.js';
import { PageReducer, type PageAnswer } from './page-reducer.js';
import { descriptor, pathsOf, type CmdbApi, type ConnectorHistoryRead, type DataEndpoint, type GetArgs, type PageFields, type PagedEndpoint, type ResourceRequest, type ResultOf } from '../api/endpoints.js';
import type { z } from 'zod';
import type { Reply } from './attempt.js';
import { FetchedToken, PreIssuedToken, jsonHeaders, type TokenProvider, type TokenState } from './auth.js';
import { jsonDecoder } from './body.js';
import type { BudgetState } from './budget.js';
import { realClock, type Clock } from './clock.js';
import { createDispatcher } from './dispatcher.js';
import { nextPageDecision, pageQuery, readAllPages } from './paging.js';
import { HourlyRate, planAdvice, planFor, type PlanSeen, type StackPlan } from './plan.js';
import { Transport, requestName, type Decoder, type Exchange, type Outcome } from './transport.js';

export type { Clock };

export interface CmdbClientOptions {
  stack: StackConfig;
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
  /** Default: the client's own, whose worker thread starts at the first large page and stops with close(). */
  pageReducer?: PageReducer;
  /** The request budget the stack's previous runtime left (on reload); default a full bucket. */
  budget?: BudgetState;
  /** What the stack's previous runtime knew of the service (on reload): see CmdbClient.handOver. */
  carried?: ClientCarry;
  /** The endpoints the stack polls, for its poll plan (default none: no plan is published). */
  enabled?: readonly DataEndpoint[];
  /** What the stack's previous runtime saw, so that a reload plans with it (plan()). */
  seen?: PlanSeen;
}

/** What one runtime's client hands to the next on reload (src/stacks.ts decides what may pass). */
export interface ClientCarry {
  /** The connector history reader: held rows, last full scan, learned page size, incremental reads off. */
  readonly history?: ConnectorHistoryReader;
  /** The fetched token and the client-id key spelling that worked. */
  readonly token?: TokenState;
  /** The path spellings that answered 2xx. */
  readonly spellings?: ReadonlyMap<DataEndpoint, string>;
}

type Lookup<T> = { found: true; value: T } | { found: false; reply: Reply; path: string };

/** What a page says (its rows stay in the scan); a body that is not a page object is validated whole. */
function decodeHistoryPage(answer: PageAnswer, request: string, extra: ConnectorRun[]): HistoryPage {
  if (answer.kind === 'not_json') throw new CmdbInvalidBodyError(request, '', 'not JSON', { notJson: true });
  const body = answer.kind === 'page' ? { ...answer.envelope, content: [] } : answer.body;
  const result = validate(ConnectorPageSchema, body);
  if (!result.ok) throw new CmdbInvalidBodyError(request, result.field, result.message);
  const fields = result.value;
  if (answer.kind === 'page') {
    const { sorted, first, last, min, count, fresh, firstFresh } = answer;
    return { count, fields, sorted, first, last, min, fresh, firstFresh };
  }
  // A bare list cannot say it is sorted: an incremental read falls back to a full scan.
  for (const run of fields.content) extra.push(run);
  return { count: fields.content.length, fields, sorted: false };
}

/** Rows validated per slice, the event loop free between slices (a scan keeps ~1,000 rows). */
const VALIDATE_SLICE = 200;

async function validateRows(rows: readonly unknown[], request: string): Promise<ConnectorRun[]> {
  const out: ConnectorRun[] = [];
  for (let start = 0; start < rows.length; start += VALIDATE_SLICE) {
    if (start > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const result = validate(ConnectorPageSchema, { content: rows.slice(start, start + VALIDATE_SLICE) });
    if (!result.ok) {
      // Name the row by its place among the kept rows of the scan.
      const field = result.field.replace(/^content\[(\d+)\]/, (_m, i: string) => `content[${Number(i) + start}]`);
      throw new CmdbInvalidBodyError(request, field, result.message);
    }
    for (const run of result.value.content) out.push(run);
  }
  return out;
}

export class CmdbClient implements CmdbApi {
  private stack: StackConfig;
  private readonly logger: Logger;
  private readonly instruments: Instruments;
  private readonly transport: Transport;
  private readonly tokens: TokenProvider;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly lifetime = new AbortController();
  private closing: Promise<void> | undefined;
  private readonly clock: Clock;
  private readonly history: ConnectorHistoryReader;
  private readonly pages: PageReducer;
  private readonly ownsPages: boolean;
  /** A connector read with no page for this long is stuck; until then it runs past its interval. */
  readonly connectorStallSeconds: number;
  /** The connector read in progress: when it began or last received a page (unix seconds). */
  private connectorMovedAt: number | undefined;
  /** The path spelling that answered 2xx, per endpoint with more than one (/actions or /action; change history with or without `metadata`). */
  private readonly spellings = new Map<DataEndpoint, string>();
  /** What the poll plan needs of what the client saw (src/cmdb/plan.ts). */
  private seen: { -readonly [K in keyof PlanSeen]: PlanSeen[K] } = {};
  private readonly jobFetches = new HourlyRate();
  private readonly detailFetches = new HourlyRate();
  private readonly enabled: ReadonlySet<DataEndpoint>;
  /** The plan was above the budget when last logged: log again only when that changes. */
  private overBudget = false;

  constructor(opts: CmdbClientOptions) {
    const { stack, instruments, logger, scrubber } = opts;
    this.enabled = new Set(opts.enabled ?? []);
    this.stack = stack;
    this.logger = logger;
    this.instruments = instruments;
    this.ownsDispatcher = !opts.dispatcher;
    this.clock = opts.clock ?? realClock;
    this.ownsPages = !opts.pageReducer;
    this.pages = opts.pageReducer ?? new PageReducer();
    const historySettings = {
      pageSize: stack.paging.connectorPageSize,
      maxPages: stack.paging.maxPages,
      fullScanSort: stack.connectorSort,
      fullScanIntervalSeconds: stack.connectorFullScanInterval,
      timeZone: stack.timezone,
      timeoutSeconds: stack.timeoutSeconds,
      retries: stack.retries.max,
    };
    const carried = opts.carried ?? {};
    this.history = carried.history?.reconfigure(historySettings) ?? new ConnectorHistoryReader(historySettings);
    for (const [endpoint, path] of carried.spellings ?? []) this.spellings.set(endpoint, path);
    const { retries } = stack;
    // One page's worst case: every attempt timed out, every back-off at its longest, one Retry-After.
    this.connectorStallSeconds =
      stack.timeoutSeconds * (retries.max + 1) + retries.maxDelaySeconds * retries.max + retries.maxRetryAfterSeconds + 60;
    instruments.connectorScanPageSize.set({ stack: stack.name }, this.history.pageSize());
    this.dispatcher = opts.dispatcher ?? createDispatcher(stack);
    // Only where it means something: an http:// base URL has no certificate to skip.
    if (stack.tls.insecureSkipVerify && stack.baseUrl.startsWith('https:')) {
      // The origin only: a base URL may carry user:password.
      logger.warn({ origin: new URL(stack.baseUrl).origin }, 'TLS certificate verification is off for this stack (tls.insecureSkipVerify)');
    }
    instruments.rateLimitBudget.set({ stack: stack.name }, stack.rateLimitPerMinute);
    this.seen = { ...opts.seen };
    // At start and on reload: what the configuration asks of the budget (with what the previous
    // runtime saw), said once here when it does not fit.
    this.publishPlan();
    this.transport = new Transport({
      stack,
      instruments,
      logger,
      dispatcher: this.dispatcher,
      clock: this.clock,
      random: opts.random ?? Math.random,
      budget: opts.budget,
    });
    // The configured secret or token is registered with the scrubber by whoever loaded the config
    // (src/stacks.ts); tokens fetched later are registered by the token provider.
    if (stack.auth.kind === 'client') {
      this.tokens = new FetchedToken(stack.auth, {
        stack,
        transport: this.transport,
        instruments,
        scrubber,
        lifetime: this.lifetime.signal,
        logger,
      }, carried.token);
    } else {
      this.tokens = new PreIssuedToken(stack.auth, { scrubber, logger, stack: stack.name });
    }
  }

  /**
   * A reload changed only the stack's intervals (src/stacks.ts keeps this client): the plan, and
   * the windows it measures fetch rates over, follow the new ones.
   */
  reschedule(stack: StackConfig): void {
    this.stack = stack;
    this.publishPlan();
  }

  /** The stack's poll plan now: requests an hour against its budget (src/cmdb/plan.ts). */
  plan(): StackPlan {
    return planFor(this.stack, this.enabled, this.planSeen());
  }

  /** What the client saw, for the stack's next runtime (a reload plans with it). */
  planSeen(): PlanSeen {
    const now = this.clock.now();
    return {
      ...this.seen,
      actionJobsPerHour: this.jobFetches.perHour(now, this.stack.intervals.actionJobsRefresh * 1000) ?? this.seen.actionJobsPerHour,
      ingestionDetailPerHour: this.detailFetches.perHour(now, this.stack.intervals.ingestion * 10_000) ?? this.seen.ingestionDetailPerHour,
    };
  }

  /** Sets cmdb_exporter_request_demand_ratio and says so when the plan goes above the budget. */
  private publishPlan(): void {
    if (this.enabled.size === 0) return;
    const plan = this.plan();
    this.instruments.requestDemand.set({ stack: this.stack.name }, Math.round(plan.ratio * 1000) / 1000);
    const over = plan.ratio > 1;
    if (over && !this.overBudget) {
      this.logger.warn(
        { demandPerHour: Math.round(plan.total), budgetPerHour: plan.budgetPerHour, ratio: Math.round(plan.ratio * 100) / 100 },
        `the poll plan of this stack asks ${Math.round(plan.total)} requests an hour of a budget of ${plan.budgetPerHour} (rateLimitPerMinute × 60): polls will wait for the budget and fall behind their intervals; ${planAdvice(plan, this.stack)}`,
      );
    }
    this.overBudget = over;
  }

  /** What the stack's request budget has spent, handed to its next runtime on reload. */
  budgetState(): BudgetState {
    return this.transport.budgetState();
  }

  /**
   * What this client learned of the service that still holds under `next`, the stack's configuration
   * in its next runtime (a reload; call after close(), when no poll is in flight). Nothing passes to
   * another base URL. The path spellings describe the service; the token and the connector history
   * belong to the credentials too, and the history to the time zone its times were read in.
   */
  handOver(next: StackConfig): ClientCarry {
    if (!sameService(this.stack, next)) return {};
    const credentials = sameCredentials(this.stack, next);
    const token = credentials && this.tokens instanceof FetchedToken ? this.tokens.state() : undefined;
    const history = credentials && next.timezone === this.stack.timezone ? this.history : undefined;
    return { spellings: new Map(this.spellings), ...(history ? { history } : {}), ...(token ? { token } : {}) };
  }

  /** Ends a Retry-After pause of this stack at once (a reload asks the CMDB again). */
  resumeAfterRateLimit(): void {
    this.transport.resume();
  }

  /** Unix seconds when a server Retry-After pause of this stack ends; undefined while not paused. */
  rateLimitPausedUntil(): number | undefined {
    return this.transport.pausedUntil();
  }

  /** True while a pre-issued token is being rejected with 401. */
  get unauthorized(): boolean {
    return this.tokens.unauthorized;
  }

  /**
   * GET one endpoint (every page of a paged list; the given id of a per-id endpoint) and return its
   * validated result. How to ask is the endpoint's descriptor in src/api/endpoints.ts.
   */
  async get<E extends DataEndpoint>(endpoint: E, ...[id, signal]: GetArgs<E>): Promise<ResultOf<E>> {
    const d = descriptor(endpoint);
    if (endpoint === 'connector') return (await this.readConnectors(signal)).runs as ResultOf<E>;
    if (d.kind === 'paged') {
      const rows = await this.readPages(endpoint as PagedEndpoint, signal);
      if (endpoint === 'actions') this.seen.actions = rows.length;
      this.publishPlan();
      return rows as ResultOf<E>;
    }
    if (endpoint === 'action_jobs') this.jobFetches.record(this.clock.now());
    if (endpoint === 'data_ingestion_detail') this.detailFetches.record(this.clock.now());
    const paths = pathsOf(endpoint, id);
    const query = 'idInQuery' in d && d.idInQuery && id !== undefined ? `id=${encodeURIComponent(id)}` : undefined;
    const schema = d.schema as z.ZodType<unknown>;
    const extract = d.extract as (body: unknown) => ResultOf<E>;
    const result = await this.lookup(endpoint, paths, jsonDecoder(schema), query, signal);
    if (result.found) return extract(result.value);
    if ('notFoundIsEmpty' in d && d.notFoundIsEmpty) return [] as ResultOf<E>;
    throw new CmdbHttpError(requestName('GET', result.path), 404, result.reply.statusText || 'Not Found');
  }

  /** The connector history and whether it changed since the previous read. */
  async readConnectors(signal?: AbortSignal): Promise<ConnectorHistoryRead> {
    const read = await this.readConnectorHistory(signal);
    this.publishPlan();
    return read;
  }

  connectorIdleSeconds(): number | undefined {
    return this.connectorMovedAt === undefined ? undefined : this.clock.now() / 1000 - this.connectorMovedAt;
  }

  /** The connector scan in progress or the last one, and until when incremental reads are off (the status page). */
  connectorScan(): { progress?: ScanProgress; incrementalOffUntil?: number; pageSize: number } {
    const progress = this.history.progress();
    const offUntil = this.history.incrementalOffUntil(this.clock.now() / 1000);
    return { ...(progress ? { progress } : {}), ...(offUntil === undefined ? {} : { incrementalOffUntil: offUntil }), pageSize: this.history.pageSize() };
  }

  /**
   * The asset and user counts of one past day (`…/metrics/data?date=yyyy-mm-dd`): the daemon never
   * asks for a date, a backfill asks once per day of its range.
   */
  async getMetricsDay(day: string, signal?: AbortSignal): Promise<MetricsRecord> {
    const [path = ''] = pathsOf('metrics_data');
    const result = await this.lookup('metrics_data', [path], jsonDecoder(MetricsRecordSchema), `date=${encodeURIComponent(day)}`, signal);
    if (result.found) return result.value;
    throw new CmdbHttpError(requestName('GET', result.path), 404, result.reply.statusText || 'Not Found');
  }

  /**
   * Every row of the connector run history (a full scan in the service's order, every page
   * validated), handed to `visit` page by page: a backfill needs the old runs that the daemon's
   * read drops. Returns the number of pages read.
   */
  async scanConnectorHistory(visit: (rows: ConnectorRun[]) => void, signal?: AbortSignal): Promise<number> {
    const [path = ''] = pathsOf('connector');
    const { connectorPageSize: size, maxPages } = this.stack.paging;
    const decode = jsonDecoder(ConnectorPageSchema);
    for (let page = 0; ; page++) {
      const result = await this.lookup('connector', [path], decode, pageQuery(page, size, this.stack.connectorSort), signal);
      if (!result.found) throw new CmdbHttpError(requestName('GET', result.path), 404, result.reply.statusText || 'Not Found');
      visit(result.value.content);
      const decision = nextPageDecision(page, result.value.content.length, result.value, maxPages);
      if (decision === 'truncated') {
        this.logger.warn({ endpoint: 'connector', maxPages }, 'paged read stopped at paging.maxPages before the last page');
      }
      if (decision !== 'next') return page + 1;
    }
  }

  /**
   * The stack is stopping: requests waiting for the budget, a Retry-After pause or a slot give up, and so do
   * retries waiting for their back-off (CmdbAbortedError, no failure) instead of holding their poll through the stop's grace period.
   * Requests already sent go on; close() follows once the polls have ended.
   */
  stopWaiting(): void {
    this.transport.stopWaiting();
  }

  /** Ends a shared token fetch and closes the dispatcher the client made. Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.lifetime.abort();
      if (this.ownsDispatcher) await this.dispatcher.close();
      if (this.ownsPages) await this.pages.close();
    })();
    return this.closing;
  }

  /**
   * The connector run history, newest row per key only: full scans and incremental scans
   * (connector-history.ts), each page reduced as it arrives (page-reducer.ts).
   */
  private async readConnectorHistory(signal?: AbortSignal): Promise<HistoryResult> {
    const stack = this.stack.name;
    const endpoint = 'connector';
    const path = pathsOf(endpoint)[0] ?? '';
    const now = () => this.clock.now() / 1000;
    const labels = { stack };
    let scanPages = 0;
    const io: HistoryIo = {
      scan: (known) => {
        const session = this.pages.beginScan(known);
        scanPages = 0;
        // Rows of bodies that are not page objects (a bare list), already validated here.
        const extra: ConnectorRun[] = [];
        return {
          fetchPage: async (page, size, sort) => {
            scanPages++;
            let bytes = 0;
            const started = this.clock.now();
            const decode = async (reply: Reply, name: string) => {
              bytes = reply.body.length;
              return decodeHistoryPage(await session.page(reply.body), name, extra);
            };
            // A timed-out page is not asked again at the same size: the reader halves it.
            const result = await this.lookup(endpoint, [path], decode, pageQuery(page, size, sort), signal, { retryTimeouts: false });
            if (!result.found) throw new CmdbHttpError(requestName('GET', result.path), 404, result.reply.statusText || 'Not Found');
            return { ...result.value, bytes, seconds: (this.clock.now() - started) / 1000 };
          },
          rows: async () => [...(await validateRows(await session.finish(), requestName('GET', path))), ...extra],
          drop: () => session.drop(),
        };
      },
      now,
      scanned: (kind) => {
        this.instruments.connectorScans.inc({ stack, kind });
        this.seen.connectorPages = { ...this.seen.connectorPages, [kind]: scanPages };
      },
      unsorted: (page, offUntil) => {
        this.instruments.connectorSortFallbacks.inc(labels);
        this.instruments.connectorIncrementalOffUntil.set(labels, offUntil ?? 0);
        this.logger.warn(
          { endpoint, page, sort: INCREMENTAL_SORT, ...(offUntil === undefined ? {} : { incrementalOffUntil: new Date(offUntil * 1000).toISOString() }) },
          offUntil === undefined
            ? 'the connector history came back not sorted by _time descending: this poll reads every page instead'
            : 'the connector history came back not sorted by _time descending again: incremental reads are off until the time given, every poll reads every page',
        );
      },
      truncated: (rows) => {
        this.logger.warn({ endpoint, maxPages: this.stack.paging.maxPages, rows }, 'paged read stopped at paging.maxPages before the last page');
        this.instruments.pagesTruncated.inc({ stack, endpoint });
      },
      progress: (p) => {
        this.connectorMovedAt = p.endedAt === undefined ? p.lastPageAt : undefined;
        if (p.kind !== 'full') return;
        const ins = this.instruments;
        ins.connectorScanInProgress.set(labels, p.endedAt === undefined ? 1 : 0);
        ins.connectorScanPagesRead.set(labels, p.pagesRead);
        ins.connectorScanPagesExpected.set(labels, p.pagesTotal ?? 0);
        ins.connectorScanBytes.set(labels, p.bytes);
        ins.connectorScanStart.set(labels, p.startedAt);
        ins.connectorScanPageSize.set(labels, p.pageSize);
      },
      pageSize: (size, previous, reason) => {
        this.instruments.connectorScanPageSize.set(labels, size);
        if (reason === 'timeout') {
          this.logger.warn(
            { endpoint, pageSize: size, previousPageSize: previous, timeoutSeconds: this.stack.timeoutSeconds },
            'a connector history page timed out: asking for smaller pages from here on (raise timeoutSeconds or lower paging.connectorPageSize if this repeats)',
          );
        } else {
          this.logger.info({ endpoint, pageSize: size, previousPageSize: previous }, 'connector history pages come back fast again: larger pages from the next full scan');
        }
      },
      isPageTimeout: (err) => err instanceof CmdbTimeoutError,
    };
    try {
      return await this.history.read(io, now());
    } finally {
      this.connectorMovedAt = undefined;
      // 0 again once the time has passed.
      this.instruments.connectorIncrementalOffUntil.set(labels, this.history.incrementalOffUntil(now()) ?? 0);
    }
  }

  private async readPages(endpoint: PagedEndpoint, signal?: AbortSignal): Promise<unknown[]> {
    const d = descriptor(endpoint);
    const { maxPages } = this.stack.paging;
    const size = this.stack.paging[d.pageSize];
    const sort = 'sortable' in d && d.sortable ? this.stack.connectorSort : undefined;
    const schema = d.schema as z.ZodType<PageFields>;
    const rowsOf = d.rows as (page: PageFields) => unknown[];
    let pages = 0;
    const fetchPage = async (page: number) => {
      pages++;
      const result = await this.lookup(endpoint, pathsOf(endpoint), jsonDecoder(schema), pageQuery(page, size, sort), signal);
      if (result.found) return result.value;
      throw new CmdbHttpError(requestName('GET', result.path), 404, result.reply.statusText || 'Not Found');
    };
    const rows = await readAllPages(fetchPage, rowsOf, maxPages, (read) => {
      this.logger.warn({ endpoint, maxPages, rows: read }, 'paged read stopped at paging.maxPages before the last page');
      this.instruments.pagesTruncated.inc({ stack: this.stack.name, endpoint });
    });
    if (endpoint === 'actions') this.seen.actionPages = pages;
    return rows;
  }

  /**
   * GET the first spelling that answers 2xx and remember it. Once one is remembered only it is
   * asked, and its 404 is returned as not found (for the change log: no change log). Before one is
   * remembered a 404 or 403 moves on to the next spelling; a 403 on every spelling throws 403. Any
   * other status throws.
   */
  private async lookup<T>(
    endpoint: DataEndpoint,
    paths: readonly string[],
    decode: Decoder<T>,
    query: string | undefined,
    signal?: AbortSignal,
    options: Pick<Exchange, 'retryTimeouts'> = {},
  ): Promise<Lookup<T>> {
    const known = this.spellings.get(endpoint);
    const candidates = known ? [known] : paths;
    let notFound: Lookup<T> | undefined;
    let forbidden: Reply | undefined;
    for (const path of candidates) {
      const outcome = await this.authorizedGet(endpoint, path, query, decode, signal, options);
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
      if (!tryNext) throw new CmdbHttpError(requestName('GET', path), status, outcome.reply.statusText);
      if (status === 403) forbidden ??= outcome.reply;
      else notFound = { found: false, reply: outcome.reply, path };
    }
    // Every spelling refused: a 403 says more than a 404 on the other spelling.
    if (forbidden) throw new CmdbHttpError(requestName('GET', candidates[0] ?? ''), 403, forbidden.statusText);
    return notFound as Lookup<T>;
  }

  /**
   * One request of a resource reader (the saved queries, src/cmdb/query-reader.ts) on the same road
   * as every GET: token, budget, retries, caps; a POST carries `body` as JSON. The 2xx answer is
   * validated with the request's schema; any other answer throws.
   */
  async send<T>(request: ResourceRequest<T>, signal?: AbortSignal): Promise<T> {
    const { endpoint, method, path, schema } = request;
    const body = request.body === undefined ? {} : { body: JSON.stringify(request.body) };
    const outcome = await this.authorizedGet(endpoint, path, undefined, jsonDecoder(schema), signal, { method, ...body });
    if (outcome.ok) return outcome.value;
    throw new CmdbHttpError(requestName(method, path), outcome.reply.status, outcome.reply.statusText);
  }

  /** One request (a GET unless `options.method` says otherwise) with the current token; after a 401, one retry with a renewed token if there is one. */
  private async authorizedGet<T>(
    endpoint: DataEndpoint,
    path: string,
    query: string | undefined,
    decode: Decoder<T>,
    signal?: AbortSignal,
    options: Pick<Exchange, 'retryTimeouts' | 'body'> & { method?: Exchange['method'] } = {},
  ): Promise<Outcome<T>> {
    const method = options.method ?? 'GET';
    // Checked before the token: an aborted poll must not start a token fetch either.
    if (signal?.aborted) throw new CmdbAbortedError(requestName(method, path));
    let credential = await this.tokens.current(signal);
    for (let renewed = false; ; renewed = true) {
      const headers = { ...jsonHeaders(this.stack.userAgent), Authorization: `Bearer ${credential.token}` };
      const outcome = await this.transport.send({ endpoint, path, query, headers, ...options, method }, decode, signal);
      if (outcome.ok) this.tokens.accepted();
      if (outcome.ok || outcome.reply.status !== 401) return outcome;
      const next = renewed ? undefined : await this.tokens.renew(credential, signal);
      if (!next) {
        this.tokens.refused();
        const why = renewed ? 'still 401 after a new token' : 'the token is not accepted';
        throw new CmdbUnauthorizedError(requestName(method, path), `401 Unauthorized (${why})`);
      }
      credential = next;
    }
  }
}

/** The same CMDB: the same base URL (user info, path and all). */
export function sameService(a: StackConfig, b: StackConfig): boolean {
  return a.baseUrl === b.baseUrl;
}

/** The same service asked with the same credentials (client id, secret and its key, or the token). */
export function sameCredentials(a: StackConfig, b: StackConfig): boolean {
  return sameService(a, b) && JSON.stringify(a.auth) === JSON.stringify(b.auth);
}
