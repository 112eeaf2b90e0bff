/**
 * The CMDB endpoints: one descriptor each, the only place that says how an endpoint is requested
 * (path spellings, paging, per id or not, 404 meaning) and what its validated result is. The
 * client, the poller, the collectors' input types, the metric catalogue's source texts and the
 * simulator's routes are all derived from ENDPOINT_TABLE.
 *
 * The client requests nothing else. In particular it never calls
 * GET /CMDB/v2/system/data-ingestion/run, which on the real service starts a full ingestion.
 */
import type { z } from 'zod';
import type { RequestContext } from './request-context.js';
import {
  ActionJobListSchema,
  ActionPageSchema,
  ChangeListSchema,
  ConnectorPageSchema,
  IngestionDetailSchema,
  IngestionRunListSchema,
  LicenseRecordSchema,
  MetricsRecordSchema,
  NextRunSchema,
  FieldMetadataListSchema,
  QueryCountSchema,
  type FieldMetadata,
} from './schemas.js';
import type { QueryOutcome, QueryTable, SentCriterion } from './query.js';

export const BASE = '/CMDB';
export const TOKEN_PATH = `${BASE}/v1/access_token`;
const METRICS = `${BASE}/v2/system/metrics`;

/**
 * Encode one path segment so that `/`, `?`, `#`, `%` and `..` in an id can never change the path.
 * Never pass a path built from this through `new URL()`: the WHATWG parser turns `%2E%2E` back into a
 * `..` segment and resolves it away. The client sends origin and path to undici separately.
 */
export function pathSegment(id: string): string {
  const encoded = encodeURIComponent(id);
  // encodeURIComponent leaves `.` alone; a segment of only dots would be resolved away as `.`/`..`.
  return /^\.+$/.test(encoded) ? encoded.replace(/\./g, '%2E') : encoded;
}

/** Poll groups: each is one scheduler job per stack with its own interval (`intervals.<group>`). */
export const GROUP_NAMES = ['inventory', 'license', 'connectors', 'ingestion', 'actions', 'actionJobs', 'changes', 'queries'] as const;
export type GroupName = (typeof GROUP_NAMES)[number];

/** Page fields every paged list may carry (Spring-style; all optional). */
export interface PageFields {
  last?: boolean | null;
  totalPages?: number | null;
}

type FanOut = 'once' | 'each' | 'newest';

interface Common<F extends FanOut = FanOut> {
  readonly group: GroupName;
  /** Path spellings, the next tried on a 404 (the one that worked is remembered); given the encoded id segment. */
  readonly paths: (segment: string) => readonly string[];
  /** `once` per poll; `each` id of a list (Action jobs, tracked names); the `newest` id only (ingestion detail). */
  readonly fanOut: F;
  /** The id goes in the query (`id=<name>`) rather than in the path. */
  readonly idInQuery?: boolean;
  /** A 404 means "nothing" (an empty list) instead of an error. */
  readonly notFoundIsEmpty?: boolean;
  /** What the id is called in documentation (`<run_id>`); per-id endpoints only. */
  readonly idName?: string;
  /** Documentation text of the path when the first spelling would mislead (shared families). */
  readonly docPath?: string;
  /** POST with a JSON body (the data query); GET when absent. */
  readonly method?: 'POST';
}

interface Single<Body, Result, F extends FanOut = FanOut> extends Common<F> {
  readonly kind: 'single';
  readonly schema: z.ZodType<Body>;
  readonly extract: (body: Body) => Result;
}

interface Paged<Page extends PageFields, Row> extends Common<'once'> {
  readonly kind: 'paged';
  readonly schema: z.ZodType<Page>;
  readonly rows: (page: Page) => Row[];
  /** The `paging.*` setting that sizes a page. */
  readonly pageSize: 'connectorPageSize' | 'actionPageSize';
  /** The stack setting `connectorSort` applies to this list. */
  readonly sortable?: boolean;
  /** A history read as a scan (CmdbApi.scan): every page, past its interval while pages keep coming. */
  readonly scan?: boolean;
}

// Each helper fixes the type parameters for one entry, so the table keeps every entry's own types.
const single = <Body, Result, F extends FanOut>(d: Omit<Single<Body, Result, F>, 'kind'>): Single<Body, Result, F> => ({
  kind: 'single',
  ...d,
});
const paged = <Page extends PageFields, Row>(d: Omit<Paged<Page, Row>, 'kind'>): Paged<Page, Row> => ({ kind: 'paged', ...d });
const whole = <T>(body: T): T => body;

export const ENDPOINT_TABLE = {
  metrics_data: single({ group: 'inventory', fanOut: 'once', paths: () => [`${METRICS}/data`], schema: MetricsRecordSchema, extract: whole }),
  license: single({ group: 'license', fanOut: 'once', paths: () => [`${METRICS}/license`], schema: LicenseRecordSchema, extract: whole }),
  connector: paged({
    group: 'connectors',
    fanOut: 'once',
    paths: () => [`${METRICS}/connector`],
    schema: ConnectorPageSchema,
    rows: (p) => p.content,
    pageSize: 'connectorPageSize',
    sortable: true,
    scan: true,
  }),
  data_ingestion: single({
    group: 'ingestion',
    fanOut: 'once',
    paths: () => [`${METRICS}/data-ingestion`],
    schema: IngestionRunListSchema,
    extract: (b) => b.data_ingestion_runs,
  }),
  // The API documentation shows this path with and without /next; the path ending in /next applies.
  data_ingestion_next: single({ group: 'ingestion', fanOut: 'once', paths: () => [`${METRICS}/data-ingestion/next`], schema: NextRunSchema, extract: whole }),
  // The documentation writes both `details` and `detail`: the singular applies. The run id is used exactly
  // as the run list (data_ingestion) returned it: `scheduled__…` with two underscores.
  data_ingestion_detail: single({
    group: 'ingestion',
    fanOut: 'newest',
    idName: 'run_id',
    paths: (id) => [`${METRICS}/data-ingestion/detail/${id}`],
    schema: IngestionDetailSchema,
    extract: (b) => b.task_list,
  }),
  // The documentation writes both /actions and /action: both are accepted, /actions tried first.
  actions: paged({
    group: 'actions',
    fanOut: 'once',
    paths: () => [`${METRICS}/actions`, `${METRICS}/action`],
    schema: ActionPageSchema,
    rows: (p) => p.actions,
    pageSize: 'actionPageSize',
  }),
  // A 404 means the Action has no jobs (or was deleted meanwhile).
  action_jobs: single({
    group: 'actionJobs',
    fanOut: 'each',
    idName: 'action_id',
    notFoundIsEmpty: true,
    paths: (id) => [`${METRICS}/action-jobs/${id}`],
    schema: ActionJobListSchema,
    extract: whole,
  }),
  // The documentation gives the path with and without the `metadata` segment: with it applies, the form
  // without it is the fallback. 404 = no change log.
  asset_change: single({
    group: 'changes',
    fanOut: 'each',
    idInQuery: true,
    notFoundIsEmpty: true,
    docPath: `${BASE}/v2/data/metadata/cmdb/{asset,user}/change`,
    paths: () => [`${BASE}/v2/data/metadata/cmdb/asset/change`, `${BASE}/v2/data/cmdb/asset/change`],
    schema: ChangeListSchema,
    extract: whole,
  }),
  user_change: single({
    group: 'changes',
    fanOut: 'each',
    idInQuery: true,
    notFoundIsEmpty: true,
    paths: () => [`${BASE}/v2/data/metadata/cmdb/user/change`, `${BASE}/v2/data/cmdb/user/change`],
    schema: ChangeListSchema,
    extract: whole,
  }),
  // Saved inventory queries (QueryCounting below): a table's field metadata (the id is the table), and
  // one count per query (the id is its name; a POST with the query in its body, never asked through get()).
  data_metadata: single({
    group: 'queries',
    fanOut: 'each',
    idName: 'table',
    docPath: `${BASE}/v2/data/metadata/{asset,user}`,
    paths: (table) => [`${BASE}/v2/data/metadata/${table}`],
    schema: FieldMetadataListSchema,
    extract: (b) => b.metadata,
  }),
  data_query: single({
    group: 'queries',
    fanOut: 'each',
    idName: 'query',
    method: 'POST',
    paths: () => [`${BASE}/v2/data/cmdb`],
    schema: QueryCountSchema,
    extract: (b): QueryOutcome => ({ state: 'ok', records: b.totalRecords }),
  }),
} as const;

/** Endpoints polled for data (everything but the token endpoint), in table order. */
export type DataEndpoint = keyof typeof ENDPOINT_TABLE;
export type EndpointName = 'access_token' | DataEndpoint;
export const DATA_ENDPOINTS = Object.keys(ENDPOINT_TABLE) as DataEndpoint[];
/** Every endpoint by the name used in the `endpoint` label. */
export const ENDPOINTS: readonly EndpointName[] = ['access_token', ...DATA_ENDPOINTS];

export type Descriptor<E extends DataEndpoint> = (typeof ENDPOINT_TABLE)[E];
export type PagedEndpoint = { [E in DataEndpoint]: Descriptor<E> extends { kind: 'paged' } ? E : never }[DataEndpoint];
/** Endpoints that answer one record or one list per request. */
export type SingleEndpoint = { [E in DataEndpoint]: Descriptor<E> extends { kind: 'single' } ? E : never }[DataEndpoint];

/** What one request of endpoint E yields once validated: the extracted value, or every row of every page. */
export type ResultOf<E extends DataEndpoint> =
  Descriptor<E> extends Paged<infer _P, infer Row> ? Row[] : Descriptor<E> extends Single<infer _B, infer R, FanOut> ? R : never;

/** One id's result, as the collectors of per-id endpoints receive it. */
export interface ById<T> {
  readonly id: string;
  readonly value: T;
}

/** What each endpoint's collector receives: the result; for `each`, one per id; for `newest`, one or null. */
export type InputOf<E extends DataEndpoint> = Descriptor<E>['fanOut'] extends 'each'
  ? ReadonlyArray<ById<ResultOf<E>>>
  : Descriptor<E>['fanOut'] extends 'newest'
    ? ById<ResultOf<E>> | null
    : ResultOf<E>;

export type EndpointInputs = { [E in DataEndpoint]: InputOf<E> };

/** The request arguments of `get`: the id for per-id endpoints, then what bounds the request (its signal and deadline). */
export type GetArgs<E extends DataEndpoint> = Descriptor<E>['fanOut'] extends 'once'
  ? [id?: undefined, ctx?: RequestContext]
  : [id: string, ctx?: RequestContext];

/** A read of the connector run history: `changed` false when `runs` are those the previous read returned. */
export interface ConnectorHistoryRead {
  readonly changed: boolean;
  readonly runs: ResultOf<'connector'>;
}

/** What the poller needs to count saved queries (QueryReader, src/cmdb/readers/queries.ts). */
export interface QueryCounting {
  fields(table: QueryTable, ctx?: RequestContext): Promise<FieldMetadata[]>;
  count(table: QueryTable, query: ReadonlyArray<ReadonlyArray<SentCriterion>>, ctx?: RequestContext): Promise<number>;
}

/** How the poller reads the endpoint whose descriptor declares `scan` (the connector history). */
export interface ScanReading {
  /** The history, newest run per key, with whether it changed since the last read. */
  read(ctx?: RequestContext): Promise<ConnectorHistoryRead>;
  /** How the read shows that it moves; without it a poll of it ends within its interval like any other. */
  readonly progress?: {
    /** Seconds since the read last moved (a page arrived, or it began), on the client's clock; undefined when none runs. */
    idleSeconds(): number | undefined;
    /** Seconds a read may go without progress before it counts as stuck (under the stack's settings now). */
    stallSeconds(): number;
  };
}

/** What the poller needs of a stack's readers (StackReaders in src/cmdb/readers implements it; tests fake it). */
export interface CmdbApi {
  /** The saved queries' reader; without it, saved queries cannot run. */
  readonly queries?: QueryCounting;
  get<E extends DataEndpoint>(endpoint: E, ...args: GetArgs<E>): Promise<ResultOf<E>>;
  /** The reader of the scanned endpoint; without it, it is read through `get` and every read counts as changed. */
  readonly scan?: ScanReading;
}

/** The endpoints whose descriptor declares them read as a scan. */
export function scanned(endpoint: DataEndpoint): boolean {
  const d: Common & { scan?: boolean } = ENDPOINT_TABLE[endpoint];
  return d.scan === true;
}

export function descriptor<E extends DataEndpoint>(endpoint: E): Descriptor<E> {
  return ENDPOINT_TABLE[endpoint];
}

/** Path spellings of a request, in the order they are tried; `id` is encoded here. */
export function pathsOf(endpoint: DataEndpoint, id?: string): readonly string[] {
  const d: Common = ENDPOINT_TABLE[endpoint];
  return d.paths(id === undefined || d.idInQuery ? '' : pathSegment(id));
}

/** The HTTP method of an endpoint's requests. */
export function methodOf(endpoint: DataEndpoint): 'GET' | 'POST' {
  const d: Common = ENDPOINT_TABLE[endpoint];
  return d.method ?? 'GET';
}

/** The path as documentation shows it: `…/action-jobs/<action_id>`. */
export function docPathOf(endpoint: DataEndpoint): string {
  const d: Common = ENDPOINT_TABLE[endpoint];
  return d.docPath ?? d.paths(d.idName ? `<${d.idName}>` : '')[0] ?? '';
}

/** Path spellings per endpoint, `PATHS.action_jobs(id)`: pathsOf by name (the simulator and tests use it). */
export const PATHS = Object.fromEntries(DATA_ENDPOINTS.map((e) => [e, (id?: string) => pathsOf(e, id)])) as {
  readonly [E in DataEndpoint]: (id?: string) => readonly string[];
};

export function groupOf(endpoint: DataEndpoint): GroupName {
  return ENDPOINT_TABLE[endpoint].group;
}

/** Poll groups and their endpoints, in table order. */
export const GROUPS = Object.fromEntries(
  GROUP_NAMES.map((g) => [g, DATA_ENDPOINTS.filter((e) => groupOf(e) === g)]),
) as unknown as Readonly<Record<GroupName, readonly DataEndpoint[]>>;
