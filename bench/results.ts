/** The shapes of the figures, shared by the benchmark, its exporter process and its reports. */
import type { SizeName } from './sizes.js';
import type { Bounds, Distribution } from './stats.js';

/** What the exporter process needs to poll the simulator. */
export interface ExporterInput {
  readonly baseUrl: string;
  readonly clientId: string;
  readonly secret: string;
  readonly trackedAssets: readonly string[];
  readonly trackedUsers: readonly string[];
  readonly rateLimitPerMinute: number;
  readonly maxSeries: number;
  /** The connector-history cell: scheduler on, with these settings. */
  readonly history?: { readonly connectorPageSize: number; readonly connectorIntervalSeconds: number };
}

export interface Memory {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
  /** True when a full GC ran just before reading (the process was started with --expose-gc). */
  readonly afterGc: boolean;
}

export interface PollFigures {
  readonly ok: boolean;
  /** Endpoints not in state ok after the poll. */
  readonly failed: readonly string[];
  readonly wallMs: number;
  /** User + system CPU time of the exporter process during the poll. */
  readonly cpuMs: number;
  /** Time requests waited for the client-side budget, summed over requests (cmdb_rate_limit_wait_seconds_total). */
  readonly budgetWaitSeconds: number;
  /** The first metricsText() after the poll, which renders the changed exposition. */
  readonly renderMs: number;
  /** Series derived from CMDB data (the snapshot store's count). */
  readonly cmdbSeries: number;
  readonly seriesByEndpoint: Readonly<Record<string, number>>;
  /** Every sample line of /metrics, the exporter's own and prom-client's included. */
  readonly exposedSeries: number;
  readonly textBytes: number;
  readonly memory: Memory;
}

/** A poll as the benchmark saw it: the exporter's figures plus the simulator's request log. */
export interface PollRun extends PollFigures {
  readonly requests: number;
  readonly requestsByEndpoint: Readonly<Record<string, number>>;
}

/** In-process costs, in ms per call. */
export interface RenderFigures {
  /** metricsText() with nothing changed: the cached text, the license days and prom-client's registry. */
  readonly scrape: Distribution;
  /** The snapshot store's part alone. */
  readonly storeText: Distribution;
  /** prom-client's registry.metrics() alone (the exporter's own instruments and default metrics). */
  readonly registry: Distribution;
  /** metricsText() right after a snapshot change: the text assembled again from rendered pieces. */
  readonly rerender: Distribution;
  /** gzip of the whole text, as /metrics does for every scrape that accepts gzip. */
  readonly gzip: Distribution;
}

export interface ScrapeCell {
  readonly clients: number;
  readonly gzip: boolean;
  readonly requests: number;
  readonly errors: number;
  readonly seconds: number;
  readonly perSecond: number;
  /** Latency in ms. */
  readonly latency: Distribution;
  readonly responseBytes: number;
}

export interface DataShape {
  readonly connectors: number;
  readonly connectorProfiles: number;
  readonly connectorRuns: number;
  readonly actions: number;
  readonly actionJobs: number;
  readonly trackedNames: number;
}

export interface SizeResult {
  readonly size: SizeName;
  readonly data: DataShape;
  readonly memoryAtStart: Memory;
  /** First poll of every endpoint, cold: token, every page, every Action's jobs, every tracked name. */
  readonly first: PollRun;
  /** The same poll again at once: only what may have changed is fetched. */
  readonly repeat: PollRun;
  /** A poll one (exporter-clock) hour later, when every Action's jobs are due for their refresh. */
  readonly hourLater: PollRun;
  readonly render: RenderFigures;
  readonly scrape: readonly ScrapeCell[];
  readonly memoryAfterScrapes: Memory;
  readonly warnings: readonly string[];
}

/** The first poll under the default request budget: measured for one size, computed for the others. */
export interface BudgetFigures {
  readonly ratePerMinute: number;
  readonly burst: number;
  /** Measured: size, requests and wall time of a real first poll at the default budget. */
  readonly measured?: { readonly size: SizeName; readonly requests: number; readonly wallSeconds: number; readonly modelSeconds: number };
}

export interface Machine {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryBytes: number;
  readonly node: string;
  readonly platform: string;
  readonly date: string;
}

export interface BenchSettings {
  readonly scrapeSeconds: number;
  readonly scrapeMaxRequests: number;
  readonly clients: readonly number[];
  readonly renderBounds: RenderBounds;
}

export interface BenchResult {
  readonly machine: Machine;
  readonly settings: BenchSettings;
  readonly sizes: readonly SizeResult[];
  readonly budget: BudgetFigures;
  readonly totalSeconds: number;
  /** The connector-history cell, when it ran. */
  readonly history?: HistoryResult;
  /** The request-budget cell (simulated hours at 200 Actions), when it ran. */
  readonly requestBudget?: RequestBudgetFigures;
}

export interface RenderBounds {
  /** Loops over calls that take milliseconds (an unchanged scrape and its parts). */
  readonly cheap: Bounds;
  /** Loops over calls that may take seconds at the large size (re-render, gzip). */
  readonly costly: Bounds;
}

// ---- the connector history cell (bench/history-run.ts) ----
export interface ConnectorPoll {
  readonly requests: number;
  /** Response bytes of the poll's requests; null when the simulator does not log them. */
  readonly bytes: number | null;
}

export interface HistoryResult {
  readonly runs: number;
  readonly seconds: number;
  readonly scrape: Distribution;
  readonly scrapes: number;
  readonly peakRssBytes: number | null;
  readonly polls: readonly ConnectorPoll[];
  /** Largest later poll's bytes / first poll's bytes; null without byte figures or a second poll. */
  readonly laterPollShare: number | null;
  /** One big page (20,000 rows), reduced on the event loop and in the worker thread. */
  readonly bigPage?: BigPage;
}

export interface BigPage {
  readonly bytes: number;
  /** JSON.parse and reduction on the calling thread: the event loop is blocked this long. */
  readonly inlineMs: number;
  /** The same page through the worker: wall time, and the longest the event loop was held meanwhile. */
  readonly workerMs: number;
  readonly workerMaxLagMs: number;
}

// ---- the request-budget cell (bench/budget-run.ts measureRequestBudget) ----
export interface RequestBudgetFigures {
  readonly simulatedHours: number;
  readonly steadyHours: number;
  readonly wallSeconds: number;
  readonly actions: number;
  readonly ratePerMinute: number;
  readonly actionJobsPerMinute?: number;
  /** Requests per hour by endpoint, measured after start-up and on the naive schedule. */
  readonly perHour: Readonly<Record<string, { readonly measured: number; readonly naive: number }>>;
  readonly totalPerHour: number;
  readonly naivePerHour: number;
  readonly jobFetchesPerHour: number;
  readonly actionRunsPerHour: number;
  /** Slow refresh allowance: every Action once per intervals.actionJobsRefresh. */
  readonly refreshPerHour: number;
  /** The ceiling of the goal: 1.1 × runs + slow refresh. */
  readonly jobFetchesAllowed: number;
  /** Most requests in any rolling 60 s, start-up included, and when that minute began (s after start). */
  readonly busiestMinute: number;
  readonly busiestMinuteAt: number;
  /** Requests in the first 10 minutes. */
  readonly startupRequests: number;
  /** Seconds from start until every enabled endpoint finished a first poll (undefined: never). */
  readonly readySeconds?: number;
  readonly maxBacklog: number;
}
