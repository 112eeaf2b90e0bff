/**
 * Every configuration key, once: its rule (shared by the YAML schema and the environment variables),
 * its built-in default, its environment variable and command-line flag, and any start-up warning.
 * The YAML schema (schema.ts), the variables (env.ts), the defaults and the types of the loaded
 * configuration (types.ts) are all derived from these tables, so a new setting is one entry here.
 *
 * Ranges are generous but finite: they catch typos (a timeout of 30000 meant as ms, a page size of 0)
 * without forbidding unusual but working set-ups.
 */
import type { GroupName } from '../api/endpoints.js';
import { DEFAULT_USER_AGENT } from '../version.js';
import { bool, bytesIn, type Check, numberIn, oneOf, secondsIn, text } from './checks.js';
import {
  baseUrl,
  clientIdKey,
  exampleBaseUrl,
  connectorSort,
  endpointList,
  filePath,
  headerText,
  interval,
  listenAddress,
  nameList,
  proxyUrl,
  runbookBase,
  savedQueries,
  secretText,
  stackName,
  timezone,
  tokenText,
} from './fields.js';
import { valueAt } from './issues.js';

/** One key: its rule, and its default unless `optional` (then it is simply unset by default). */
export interface Key<T, Optional extends boolean = boolean> {
  readonly check: Check<T>;
  readonly optional: Optional;
  readonly default: Optional extends true ? undefined : T;
  /** The environment variable that sets it (for the one stack configured without a file). */
  readonly env?: string;
  /** The command-line flag that sets it (global keys), used as the path of its problems. */
  readonly flag?: string;
  /** A message for a valid value that still deserves a warning at start-up. */
  readonly warn?: (value: T) => string | undefined;
}

type Extras<T> = Pick<Key<T>, 'env' | 'flag' | 'warn'>;

/** A key with a built-in default. */
function key<T>(check: Check<T>, fallback: NoInfer<T>, extras: Extras<NoInfer<T>> = {}): Key<T, false> {
  return { check, optional: false, default: fallback, ...extras };
}

/** A key that is unset unless configured. */
function optional<T>(check: Check<T>, extras: Extras<NoInfer<T>> = {}): Key<T, true> {
  return { check, optional: true, default: undefined, ...extras };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any value type: the tables mix them
type AnyKey = Key<any>;
/** A table of keys; a nested table is a YAML mapping such as `retries` or `tls`. */
export type Table = { readonly [name: string]: AnyKey | Table };

export function isKey(entry: AnyKey | Table): entry is AnyKey {
  return typeof entry.check === 'function';
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type Frozen<T> = T extends readonly (infer U)[] ? readonly U[] : T;
type ValueOf<E> = E extends { readonly check: Check<infer T> } ? Frozen<T> : E extends Table ? Resolved<E> : never;
type IsOptional<E> = E extends { readonly optional: true } ? true : false;

/** The values of a table once loaded: every key with a default is set, optional ones may be absent. */
export type Resolved<R extends Table> = Simplify<
  { readonly [K in keyof R as IsOptional<R[K]> extends true ? never : K]: ValueOf<R[K]> } & {
    readonly [K in keyof R as IsOptional<R[K]> extends true ? K : never]?: ValueOf<R[K]>;
  }
>;

/** Every key of a table, nested ones as dotted paths, in table order. */
export function keysOf(table: Table, prefix = ''): [dotted: string, key: AnyKey][] {
  return Object.entries(table).flatMap(([name, entry]): [string, AnyKey][] => {
    const dotted = prefix === '' ? name : `${prefix}.${name}`;
    return isKey(entry) ? [[dotted, entry]] : keysOf(entry, dotted);
  });
}

/** The built-in defaults of a table. */
export function defaultsOf<R extends Table>(table: R): Resolved<R> {
  const out: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(table)) {
    if (!isKey(entry)) out[name] = defaultsOf(entry);
    else if (!entry.optional) out[name] = entry.default;
  }
  return out as Resolved<R>;
}

/** `values` with its keys in table order, unset keys left out, lists copied. */
export function inTableOrder<R extends Table>(table: R, values: Resolved<R>): Resolved<R> {
  const out: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(table)) {
    const value = (values as Record<string, unknown>)[name];
    if (value === undefined) continue;
    if (isKey(entry)) out[name] = Array.isArray(value) ? [...(value as unknown[])] : value;
    else out[name] = inTableOrder(entry, value as Resolved<Table>);
  }
  return out as Resolved<R>;
}

const whole = { integer: true };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['json', 'pretty'] as const;
export const DEFAULT_PORT = 9873;

/** The keys of the exporter itself, at the top level of the file. */
export const GLOBALS = {
  /** host:port */
  listenAddress: key(listenAddress, `:${DEFAULT_PORT}`, { env: 'EXPORTER_LISTEN_ADDRESS', flag: '--web.listen-address' }),
  logLevel: key(oneOf(LOG_LEVELS), 'info', { env: 'LOG_LEVEL', flag: '--log.level' }),
  logFormat: key(oneOf(LOG_FORMATS), 'json', { env: 'LOG_FORMAT', flag: '--log.format' }),
  /** Allow POST /-/reload. */
  enableReload: key(bool, false),
  /** A directory of stack files (stacks-dir.ts); relative to the config file's directory. */
  stacksDir: optional(filePath, { env: 'EXPORTER_STACKS_DIR' }),
  /** What the exporter knew, kept across restarts (docs/restarts.md); unset: every start is a cold start. */
  storagePath: optional(filePath, { env: 'EXPORTER_STORAGE_PATH', flag: '--storage.path' }),
  /** Base of the status page's "what to do" links; unset: the runbooks the exporter serves itself. */
  runbookBaseUrl: optional(runbookBase, { env: 'EXPORTER_RUNBOOK_BASE_URL' }),
} satisfies Table;

/** Who a stack is: required in each YAML stack, never under `defaults`. */
export const IDENTITY = {
  /** Value of the `stack` label. */
  name: optional(stackName, { env: 'CMDB_STACK' }),
  /** Address before /CMDB, without a trailing slash, e.g. https://cmdb.example.com */
  baseUrl: optional(baseUrl, { env: 'CMDB_BASE_URL', warn: exampleBaseUrl }),
} satisfies Table;

/** How a stack authenticates (credentials.ts has the rules between them). Never under `defaults`. */
export const CREDENTIALS = {
  clientId: optional(text(), { env: 'CMDB_CLIENT_ID' }),
  secret: optional(secretText, { env: 'CMDB_SECRET' }),
  secretFile: optional(filePath, { env: 'CMDB_SECRET_FILE' }),
  token: optional(tokenText, { env: 'CMDB_TOKEN' }),
  tokenFile: optional(filePath, { env: 'CMDB_TOKEN_FILE' }),
} satisfies Table;

/** The real service allows 60 requests a minute (see docs/configuration.md). */
export const SERVICE_REQUESTS_PER_MINUTE = 60;

/**
 * Per-stack settings, which may also be set under `defaults`, each described in
 * docs/configuration.md. Their order is the order of the keys of a loaded StackConfig.
 */
export const SETTINGS = {
  /** JSON key for the client id in the token request body (`clientID`; the spec also shows `clientId`). */
  clientIdKey: key(clientIdKey, 'clientID', { env: 'CMDB_CLIENT_ID_KEY' }),
  userAgent: key(headerText, DEFAULT_USER_AGENT, { env: 'CMDB_USER_AGENT' }),
  rateLimitPerMinute: key(numberIn(1, 6000, whole), 50, {
    env: 'CMDB_RATE_LIMIT_PER_MINUTE',
    warn: (n) =>
      n > SERVICE_REQUESTS_PER_MINUTE
        ? `rateLimitPerMinute is ${n}, above the ${SERVICE_REQUESTS_PER_MINUTE} requests a minute the real CMDB service allows: fine for the simulator or a CMDB with a higher limit, otherwise expect 429 answers`
        : undefined,
  }),
  maxConcurrency: key(numberIn(1, 64, whole), 4),
  /** Pace of the Action job fetches, a share of rateLimitPerMinute: one every 60/n seconds, the rest a backlog. */
  actionJobsPerMinute: key(numberIn(1, 6000, whole), 30, { env: 'CMDB_ACTION_JOBS_PER_MINUTE' }),
  /** Pace of `cmdb-exporter backfill`, a share of rateLimitPerMinute that leaves the daemon most of it. */
  backfillRequestsPerMinute: key(numberIn(1, 6000, whole), 15, { env: 'CMDB_BACKFILL_REQUESTS_PER_MINUTE' }),
  /** Pace of the saved queries' counts after a rebuild, a share of rateLimitPerMinute, like the Action jobs. */
  queriesPerMinute: key(numberIn(1, 6000, whole), 20, { env: 'CMDB_QUERIES_PER_MINUTE' }),
  /** Total time for one request attempt, body included. */
  timeoutSeconds: key(secondsIn(0.1, 3600), 30),
  connectTimeoutSeconds: key(secondsIn(0.1, 600), 10),
  retries: {
    /** Retries after the first attempt, for network errors, timeouts and 5xx; a 429 pauses instead (src/cmdb/policy.ts). */
    max: key(numberIn(0, 10, whole), 3),
    minDelaySeconds: key(secondsIn(0, 60), 0.5),
    maxDelaySeconds: key(secondsIn(0, 3600), 30),
    /** A Retry-After (429, 502, 503, 504) longer than this fails the request instead of waiting. */
    maxRetryAfterSeconds: key(secondsIn(0, 3600), 120),
  },
  maxResponseBytes: key(bytesIn(1024, 2 * 1024 ** 3), 256 * 1024 * 1024),
  /** Files here; the loaded StackConfig holds their PEM contents instead (TlsConfig). */
  tls: {
    caFile: optional(filePath, { env: 'CMDB_CA_FILE' }),
    certFile: optional(filePath),
    keyFile: optional(filePath),
    insecureSkipVerify: key(bool, false, { env: 'CMDB_INSECURE_SKIP_VERIFY' }),
  },
  /** Explicit proxy; when unset, HTTPS_PROXY / HTTP_PROXY / NO_PROXY from the environment apply. */
  proxyUrl: optional(proxyUrl),
  paging: {
    connectorPageSize: key(numberIn(1, 10_000, whole), 2000),
    actionPageSize: key(numberIn(1, 2_000, whole), 100),
    maxPages: key(numberIn(1, 10_000, whole), 100),
  },
  /** Connector list sort, `field,asc|desc`, sent as `sort=field%2Casc` (full scans only). */
  connectorSort: optional(connectorSort),
  /** How often the whole connector run history is read again; polls in between read only the newest runs. */
  connectorFullScanInterval: key(secondsIn(60, 30 * 86_400), 86_400, { env: 'CMDB_CONNECTOR_FULL_SCAN_INTERVAL' }),
  track: {
    assets: key(nameList(), [], { env: 'CMDB_TRACK_ASSETS' }),
    users: key(nameList(), [], { env: 'CMDB_TRACK_USERS' }),
  },
  /** Saved inventory queries (docs/queries.md); a stack's own list replaces the list under `defaults`. */
  queries: key(savedQueries, []),
  /** Poll intervals in seconds, one per scheduler group, plus the slow refresh of Action jobs. */
  intervals: {
    inventory: key(interval, 300),
    license: key(interval, 3600),
    connectors: key(interval, 300),
    ingestion: key(interval, 60),
    actions: key(interval, 300),
    actionJobs: key(interval, 300),
    actionJobsRefresh: key(interval, 3600),
    changes: key(interval, 900),
    /** Saved queries run when the data is rebuilt, at most this often, and at least daily. */
    queries: key(interval, 3600),
  } satisfies { [G in GroupName | 'actionJobsRefresh']: Key<number, false> },
  /** Series of a failing endpoint are dropped once its last success is older than this many intervals. */
  staleIntervals: key(numberIn(1, 100, whole), 3),
  /** First back-off after a 403, in seconds; doubles on each further 403 up to forbiddenBackoffMaxSeconds. */
  forbiddenBackoffSeconds: key(secondsIn(1, 86_400), 900),
  forbiddenBackoffMaxSeconds: key(secondsIn(1, 7 * 86_400), 14_400),
  /** IANA zone for CMDB times sent without a zone (`yyyy-mm-dd HH:mm:ss`). */
  timezone: key(timezone, 'UTC', { env: 'CMDB_TIMEZONE' }),
  disabledEndpoints: key(endpointList, []),
  /** Cap on exported series for this stack. */
  maxSeries: key(numberIn(1, 10_000_000, whole), 20_000),
} satisfies Table;

/** Per-stack settings after merging built-ins, `defaults` and the stack's own values. */
export type ResolvedSettings = Resolved<typeof SETTINGS>;

export const BUILTIN_SETTINGS: ResolvedSettings = defaultsOf(SETTINGS);
export const BUILTIN_GLOBALS: Resolved<typeof GLOBALS> = defaultsOf(GLOBALS);
export const DEFAULT_INTERVALS: ResolvedSettings['intervals'] = BUILTIN_SETTINGS.intervals;

export interface ConfigWarning {
  readonly stack: string;
  readonly key: string;
  readonly message: string;
}

/**
 * Values that are valid but deserve a warning at start-up. The caller logs them; loading does not,
 * because it has no logger and runs again on every reload.
 */
export function configWarnings(config: { readonly stacks: readonly { readonly name: string }[] }): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  for (const stack of config.stacks) {
    for (const [dotted, { warn }] of keysOf({ ...IDENTITY, ...SETTINGS })) {
      const value = valueAt(stack, dotted.split('.'));
      const message = warn === undefined || value === undefined ? undefined : warn(value);
      if (message !== undefined) warnings.push({ stack: stack.name, key: dotted, message });
    }
  }
  return warnings;
}
