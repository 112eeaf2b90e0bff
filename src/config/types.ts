/**
 * The validated, defaulted configuration. `loadConfig` (src/config/load.ts) builds it from the YAML
 * file and the environment; everything downstream reads only this shape.
 */
import type { DataEndpoint, GroupName } from '../api/endpoints.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type LogFormat = 'json' | 'pretty';

export type StackAuth =
  | {
      readonly kind: 'client';
      readonly clientId: string;
      /** Loaded from `secret` or `secretFile`. Never logged. */
      readonly secret: string;
      /** JSON key for the client id in the token request body (`clientID`; the spec also shows `clientId`). */
      readonly clientIdKey: string;
    }
  | {
      readonly kind: 'token';
      /** A pre-issued bearer token, loaded from `token` or `tokenFile`. Never logged. */
      readonly token: string;
      /** Set when the token came from a file: re-read on a 401, so a rotated token is picked up. */
      readonly tokenFile?: string;
    };

/** Poll intervals in seconds, one per scheduler group, plus the slow refresh of Action jobs. */
export type Intervals = { readonly [G in GroupName]: number } & { readonly actionJobsRefresh: number };

export interface RetryConfig {
  /** Retries after the first attempt, for network errors, 5xx and 429. */
  readonly max: number;
  readonly minDelaySeconds: number;
  readonly maxDelaySeconds: number;
  /** A 429 Retry-After longer than this fails the request instead of waiting. */
  readonly maxRetryAfterSeconds: number;
}

export interface TlsConfig {
  /** PEM contents, loaded from caFile / certFile / keyFile at config load. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly insecureSkipVerify: boolean;
}

export interface StackConfig {
  /** Value of the `stack` label. */
  readonly name: string;
  /** Address before /CMDB, without a trailing slash, e.g. https://cmdb.example.com */
  readonly baseUrl: string;
  readonly auth: StackAuth;
  readonly userAgent: string;
  readonly rateLimitPerMinute: number;
  readonly maxConcurrency: number;
  /** Total time for one request attempt, body included. */
  readonly timeoutSeconds: number;
  readonly connectTimeoutSeconds: number;
  readonly retries: RetryConfig;
  readonly maxResponseBytes: number;
  readonly tls: TlsConfig;
  /** Explicit proxy; when unset, HTTPS_PROXY / HTTP_PROXY / NO_PROXY from the environment apply. */
  readonly proxyUrl?: string;
  readonly paging: {
    readonly connectorPageSize: number;
    readonly actionPageSize: number;
    readonly maxPages: number;
  };
  /** Connector list sort, `field,asc|desc`, sent as `sort=field%2Casc`. */
  readonly connectorSort?: string;
  readonly track: { readonly assets: readonly string[]; readonly users: readonly string[] };
  readonly intervals: Intervals;
  /** Series of a failing endpoint are dropped once its last success is older than this many intervals. */
  readonly staleIntervals: number;
  /** First back-off after a 403, in seconds; doubles on each further 403 up to forbiddenBackoffMaxSeconds. */
  readonly forbiddenBackoffSeconds: number;
  readonly forbiddenBackoffMaxSeconds: number;
  /** IANA zone for CMDB times sent without a zone (`yyyy-mm-dd HH:mm:ss`). */
  readonly timezone: string;
  readonly disabledEndpoints: readonly DataEndpoint[];
  /** Cap on exported series for this stack. */
  readonly maxSeries: number;
}

export interface ExporterConfig {
  /** host:port */
  readonly listenAddress: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Allow POST /-/reload. */
  readonly enableReload: boolean;
  readonly stacks: readonly StackConfig[];
  /** The file it was loaded from, if any (SIGHUP re-reads it). */
  readonly configFile?: string;
}

export const DEFAULT_PORT = 9873;

export const DEFAULT_INTERVALS: Intervals = {
  inventory: 300,
  license: 3600,
  connectors: 300,
  ingestion: 60,
  actions: 300,
  actionJobs: 300,
  actionJobsRefresh: 3600,
  changes: 900,
};
