/**
 * The programmatic API of the embedded CMDB simulator (contract). `startSimulator` in
 * src/simulator/server.ts implements it; tests, the demo and the benchmarks use it. The admin HTTP
 * endpoint (/_admin/…) exposes the same controls to other processes.
 */
import type { DataEndpoint, EndpointName } from '../api/endpoints.js';

export interface SimulatorSize {
  connectors: number;
  profilesPerConnector: number;
  /** Runs kept in the history per connector profile (the list holds several runs per connector). */
  runsPerConnector: number;
  actions: number;
  jobsPerAction: number;
  ingestionRuns: number;
  tasksPerRun: number;
  trackedAssets: number;
  trackedUsers: number;
  /** Change-log entries per tracked asset or user. */
  changesPerRecord: number;
  /** Records behind the data query endpoint (POST /CMDB/v2/data/cmdb), rebuilt by the mergers. */
  assetRecords: number;
  userRecords: number;
}

export const DEFAULT_SIZE: SimulatorSize = {
  connectors: 12,
  profilesPerConnector: 2,
  runsPerConnector: 3,
  actions: 6,
  jobsPerAction: 5,
  ingestionRuns: 8,
  tasksPerRun: 5,
  trackedAssets: 3,
  trackedUsers: 2,
  changesPerRecord: 6,
  assetRecords: 400,
  userRecords: 150,
};

export interface SimulatorOptions {
  host?: string; // default 127.0.0.1
  port?: number; // default 0 (any free port)
  seed?: number; // default 42
  size?: Partial<SimulatorSize>;
  clientId?: string; // default 'demo-client'
  secret?: string; // default 'demo-secret'
  /** Clock in milliseconds. Default Date.now. A fixed clock plus live:false gives byte-identical data. */
  now?: () => number;
  /**
   * Time moves with the clock: ingestion runs start and finish, connectors run, Actions produce jobs
   * and counts drift, on a demo-friendly cadence (minutes, not hours), so a dashboard looks alive.
   */
  live?: boolean; // default false for the programmatic API, true for the CLI
  /**
   * Seconds between two runs of every connector (default: a demo cadence of 3–10 minutes, so that
   * the history moves while one watches). 86400 is the real service's usual once a day: then the
   * history of `runsPerConnector` runs spans that many days, as on a real stack. 60 to 30 days.
   */
  connectorPeriodSeconds?: number;
  /**
   * Days of history for a backfill to read: the past Action jobs (`jobsPerAction`) and ingestion runs
   * (`ingestionRuns`) are spread over that many days instead of the last minutes. Pair it with
   * `connectorPeriodSeconds: 86400` and `runsPerConnector` as many days for the connector runs. The
   * daily counts of `data?date=` and the change history reach back further anyway. 1 to 400.
   */
  historyDays?: number;
  /** Page size of the connector history when the request has no `size` (default 20). */
  connectorPageSize?: number;
  /**
   * Ignore `sort=` on the connector history and serve the unsorted order anyway (default false: the
   * real service honours `sort=_time,desc`). Exercises the exporter's sort check and its fallback.
   */
  ignoreSort?: boolean;
  /**
   * Compress answers for clients that accept gzip (Accept-Encoding), as a service or a proxy in front
   * of it may: `gzip` with a Content-Length, `gzip-chunked` streamed without one (as a compressing
   * proxy does), `off` never. Default `off` for the programmatic API, `gzip` for the CLI and the demo.
   */
  compression?: Compression;
  /** How slowly the connector history is served and how it grows while read (setConnectorPace). */
  connectorPace?: ConnectorPace;
  /**
   * Keep one token per client: a token request ends every token issued before it (401 on them), as
   * a service that keeps only a client's newest token does. Default false: every token issued
   * stays valid (until an expiry policy ends it).
   */
  oneTokenPerClient?: boolean;
  /** Faults active from the start. */
  faults?: FaultRule[];
  /** Serve HTTPS with this PEM certificate and key (to test the client's TLS options). */
  tls?: { cert: string; key: string };
  /**
   * Soak churn (churn.ts): every `everyMs`, `entities` connectors and Actions (default 2) are replaced
   * by new ones, and (`statusTexts`, default true) `statusTargets` (default 3) connectors and Actions
   * get a status never seen before.
   */
  churn?: { everyMs: number; entities?: number; statusTexts?: boolean; statusTargets?: number };
}

/** How the simulator compresses its answers (SimulatorOptions.compression). */
export type Compression = 'off' | 'gzip' | 'gzip-chunked';
export const COMPRESSIONS: readonly Compression[] = ['off', 'gzip', 'gzip-chunked'];

/**
 * The pace of the connector history, as on the real service: ~2.3 s per 100 records (`msPerRow` 23)
 * makes a 2,000-row page take ~46 s. `insertsPerPage` connectors (every profile of each) get a new,
 * newest run right after each page is built, so a read meets rows written during it.
 */
export interface ConnectorPace {
  /** Answer a connector page after this many ms per row on it (default 0). */
  msPerRow?: number;
  /** Fixed ms before every connector page (a round trip; default 0). */
  baseMs?: number;
  /** New runs written after each connector page is built (default 0). */
  insertsPerPage?: number;
  /**
   * Pages of more rows than this are held 10 minutes (longer than any timeout lets a client wait),
   * pages of fewer answer at the pace above: a page size the client must halve, without betting on
   * the margins of msPerRow against its timeout.
   */
  holdAboveRows?: number;
}

/** Endpoint a fault applies to: one of the exporter's endpoint names, or '*' for all. */
export type FaultTarget = EndpointName | '*';

export interface FaultRule {
  endpoint: FaultTarget;
  /** Answer with this HTTP status (body: `body`, or a small JSON error). */
  status?: number;
  body?: string;
  /** With status 429: the Retry-After header in seconds (omitted when undefined). */
  retryAfterSeconds?: number;
  /**
   * With retryAfterSeconds: write Retry-After as an HTTP-date (the simulator's clock plus the seconds)
   * beside a Date header of the simulator's clock, as a server whose clock differs from ours would.
   */
  retryAfterDate?: boolean;
  /** Delay before answering (applies together with the other effects or alone). */
  latencyMs?: number;
  /**
   * Hold the answer until the faults are cleared (clearFaults, DELETE /_admin/faults), then answer
   * as the rule's other effects say (alone: the normal answer). A test waits for an event instead of
   * betting on a latency: "the exporter is still waiting for this answer" lasts until it says so.
   */
  hold?: boolean;
  /** Answer 200 with a body that is not valid JSON. */
  malformedJson?: boolean;
  /** Answer 200 with valid JSON of the wrong shape (e.g. an object where a list is expected, required fields missing). */
  wrongShape?: boolean;
  /** Destroy the socket without answering. */
  reset?: boolean;
  /** Answer 3xx with this Location (to test redirect handling). */
  redirectTo?: string;
  /** Content-Type of the answer (default application/json), e.g. `text/html` for a proxy's error page. */
  contentType?: string;
  /** Answer 200 with the normal body, one byte every `dripMs` ms (headers at once): defeats idle timeouts. */
  dripMs?: number;
  /** Answer 200 with a JSON body of this many bytes (streamed in 64 KiB chunks). */
  oversizeBytes?: number;
  /** With oversizeBytes: send it chunked, without Content-Length (default: Content-Length set). */
  chunked?: boolean;
  /**
   * Send the answer with this Content-Encoding whatever the request accepts. `gzip`, `deflate` and
   * `br` encode the body (with oversizeBytes: a small body that inflates to that size, streamed
   * chunked); any other name is only a label on a plain body (a coding the client cannot decode).
   */
  contentEncoding?: string;
  /** Apply to the next N matching requests only, then expire; unset = until cleared. */
  times?: number;
}

export interface RequestRecord {
  method: string;
  /** Raw path as received, percent-encoding intact, without the query string. */
  rawPath: string;
  /** Raw query string without '?', percent-encoding intact ('' if none). */
  rawQuery: string;
  /** The endpoint the simulator routed it to, or null for an unknown path (answered 404). */
  endpoint: EndpointName | null;
  headers: Record<string, string>;
  status: number;
  at: number; // ms, simulator clock
  /** Bytes of the response body sent (0 for a reset connection). */
  bytes: number;
  /** The request body of a data query (POST /CMDB/v2/data/cmdb): which query a count was for. */
  body?: string;
}

/** Scenario controls: each takes effect at once (visible on the next poll). */
export interface ScenarioControls {
  /** yyyy-mm-dd */
  setLicenseExpiry(date: string): void;
  /**
   * Append a new, newest run for the connector (every profile of it) with this status, e.g. 'Error',
   * 'Success'. With `holdSeconds`, the connector's own runs in that time end with the same status too
   * (a broken connector stays broken long enough for an alert to fire); without it they return to the
   * connector's usual status at its next run. A later runConnector replaces the hold.
   */
  runConnector(bridgeName: string, status: string, holdSeconds?: number): void;
  /** Start a new ingestion run now; 'running' leaves it running (next_run_at becomes a text), 'success'/'failed' finish it at once. */
  runIngestion(outcome: 'success' | 'failed' | 'running'): void;
  /** Finish the running ingestion run, if any, with this status. */
  finishIngestion(outcome: 'success' | 'failed'): void;
  /** Append a new, newest job for the Action with this status, e.g. 'FAILED', 'SUCCESS'; updates its lastRunAt. */
  runActionJob(actionId: string, status: string): void;
  removeConnector(bridgeName: string): void;
  /** A new connector with one run per profile, `lastRunSecondsAgo` in the past (then it never runs again). */
  addConnector(bridgeName: string, status?: string, lastRunSecondsAgo?: number): void;
  removeAction(actionId: string): void;
  addAction(actionId: string, name?: string): void;
  /** Set the current asset count (the 30-day average stays), e.g. to simulate a sudden loss. */
  setAssetCount(count: number): void;
  setUserCount(count: number): void;
  /** Advance simulated time by this many seconds (runs what is due, also when not live). */
  advance(seconds: number): void;
  /**
   * Rebuild the data now: every internal merger (platform ML-ENGINE) writes a new run with status
   * Success, which rebuilds its table's records (the counts of the data query change) and moves the
   * merger rows of the connector history. Without a merger in the dataset it throws.
   */
  rebuild(): void;
}

export interface SimulatorControls {
  /** `path` limits the rule to one raw path (one spelling of an endpoint), `query` to one raw query string. */
  addFault(rule: FaultRule & { path?: string; query?: string }): void;
  clearFaults(): void;
  faults(): FaultRule[];
  /** Tokens stop being accepted after N authorised requests or S seconds (401 afterwards, until a new token is fetched). Undefined clears. */
  setTokenExpiry(expiry: { afterRequests?: number; afterSeconds?: number } | undefined): void;
  /** Answer 429 above N requests a minute (token endpoint included), with Retry-After when retryAfter is true. Undefined clears. */
  setRateLimit(limit: { perMinute: number; retryAfter: boolean } | undefined): void;
  /** Answer 403 on these endpoints. */
  forbid(endpoints: DataEndpoint[]): void;
  /** How slowly connector pages are served and how many runs are written during a read; undefined: at once, none. */
  setConnectorPace(pace: ConnectorPace | undefined): void;
  scenario: ScenarioControls;
}

export interface Simulator extends SimulatorControls {
  /** Base URL without /CMDB, e.g. http://127.0.0.1:41234 (https:// with `tls`) */
  readonly url: string;
  readonly port: number;
  readonly clientId: string;
  readonly secret: string;
  /** Every request received, oldest first (bounded to the last 10,000). */
  requests(): RequestRecord[];
  clearRequests(): void;
  /** Tokens issued so far (for tests that check tokens never leak). */
  issuedTokens(): string[];
  close(): Promise<void>;
}

/**
 * Strings the simulator plants inside docker_cmd, source_settings, profile objects, event messages
 * and action_status_msg. None of them may ever appear in the exporter's logs, /metrics or landing page.
 */
export const PLANTED_SECRETS: readonly string[] = [
  'sim-db-password-7Hq2',
  'sim-api-key-Zx81Lm',
  'sim-bearer-Qe55tRw',
  'sim-aws-secret-K9mNv3',
];
