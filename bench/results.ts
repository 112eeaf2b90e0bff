/** The shapes of the figures, shared by the benchmark, its exporter process and its tables. */
import type { scrapeLoad } from './scrape-load.js';
import type { SimulatorAccess, SimulatorReady } from './simulator-process.js';
import type { SizeName } from './sizes.js';
import type { Distribution } from './stats.js';

/** What the exporter process needs to poll the simulator. */
export interface ExporterInput extends SimulatorAccess {
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
  /** Longest the event loop was held during the poll and its swap (largest gap between the turns of a 1 ms timer), ms. */
  readonly maxLoopDelayMs: number;
}

/** A poll as the benchmark saw it: the exporter's figures plus the simulator's request log. */
export interface PollRun extends PollFigures {
  readonly requests: number;
  readonly requestsByEndpoint: Readonly<Record<string, number>>;
}

/** One change of the exposition, made in the exporter process and timed there. */
export interface ChangeFigures {
  /** Series swapped in (0: a status-only change, e.g. a poll that needed no request). */
  readonly series: number;
  /** From the update to the gzip response being ready. */
  readonly wallMs: number;
  /** Process CPU meanwhile (zlib's threads included). */
  readonly cpuMs: number;
  /** Longest the event loop was held meanwhile (largest gap between the turns of a 1 ms timer): the swap stall. */
  readonly maxLoopDelayMs: number;
}

export interface SwapFigures {
  /** The largest endpoint's series swapped in again with every value changed. */
  readonly data: ChangeFigures;
  /** A poll that only changed status (up, last success). */
  readonly status: ChangeFigures;
  /** Longest block of the same timer chain over 2 s with nothing to do, just before: the busy machine's share. */
  readonly idleMaxLoopDelayMs: number;
}

/** Scrapes while polls run back to back (the exporter's clock moving on between polls). */
export interface PollingScrape {
  readonly seconds: number;
  readonly polls: number;
  readonly latency: Distribution;
  readonly requests: number;
  readonly errors: number;
  readonly peakRssBytes: number;
}

export type Encoding = 'identity' | 'gzip';

export interface CompareSettings {
  readonly clients: number;
  readonly seconds: number;
  readonly rounds: number;
  readonly maxRequests: number;
}

/** One closed-loop load cell against the exporter or the bare server. */
export interface CompareCell extends Pick<Awaited<ReturnType<typeof scrapeLoad>>, 'requests' | 'errors' | 'seconds' | 'perSecond' | 'latency' | 'responseBytes'> {
  readonly target: 'exporter' | 'bare';
  readonly encoding: Encoding;
  readonly round: number;
  /** Process CPU (user + system, all threads) per request, socket writes included. */
  readonly cpuMsPerRequest: number;
  /** Largest VmRSS sampled during the cell. */
  readonly maxRssBytes: number;
}

export interface CompareFigures {
  readonly plainBytes: number;
  readonly gzipBytes: number;
  /** The exporter's largest VmRSS over 2 s with nothing asked of it, before the cells. */
  readonly idleRssBytes: number;
  /** The exporter's VmHWM after the cells. */
  readonly peakRssBytes: number;
  readonly cells: readonly CompareCell[];
}

export interface SizeResult {
  readonly size: SizeName;
  readonly data: Pick<SimulatorReady, 'connectors' | 'connectorProfiles' | 'connectorRuns' | 'actions' | 'actionJobs'> & { readonly trackedNames: number };
  readonly memoryAtStart: Memory;
  /** First poll of every endpoint, cold: token, every page, every Action's jobs, every tracked name. */
  readonly first: PollRun;
  /** The same poll again at once: only what may have changed is fetched. */
  readonly repeat: PollRun;
  /** A poll one (exporter-clock) hour later, when every Action's jobs are due for their refresh. */
  readonly hourLater: PollRun;
  /** The run of SWAP_RUNS whose data change had the median longest block (see swapRuns). */
  readonly swap: SwapFigures;
  /** Every run of the swap cell, in order. */
  readonly swapRuns: readonly SwapFigures[];
  readonly compare: CompareFigures;
  /** The same cells in the formats beyond the text format (BenchSettings.formats), when they ran. */
  readonly formats?: Readonly<Partial<Record<'openmetrics', CompareFigures>>>;
  /** Only for the sizes in BenchSettings.pollingSizes. */
  readonly pollingScrape?: PollingScrape;
  readonly memoryAfterScrapes: Memory;
  readonly warnings: readonly string[];
}

export interface BenchSettings {
  readonly compare: CompareSettings;
  /** The formats beyond the text format whose /metrics is compared with the bare server too. */
  readonly formats?: ReadonlyArray<'openmetrics'>;
  /** How long one client scrapes with gzip while polls run, and at which sizes. */
  readonly pollingSeconds: number;
  readonly pollingSizes: readonly SizeName[];
}

/** What the size cells' tables are made from. */
export interface BenchResult {
  readonly settings: BenchSettings;
  readonly sizes: readonly SizeResult[];
}

/**
 * The connector-history cell (bench/history-run.ts stallsOf): what held the slow scrapes up. The
 * exporter's event-loop stalls during the cell (gaps of a 2 ms timer chain over 20 ms), told
 * apart by the process CPU used in them: "own" when it used the CPU for at least half the stall.
 */
export interface HistoryStalls {
  readonly longestMs: number;
  /** Process CPU during the longest stall: near 0 when other processes had the cores. */
  readonly longestCpuMs: number;
  readonly longestOwnMs: number;
  readonly slowestScrapeMs: number;
  /** The part of the slowest scrape (ms) that the exporter's own stalls and its other stalls took. */
  readonly slowestScrapeOwnMs: number;
  readonly slowestScrapeOtherMs: number;
  /** The part of the slowest scrape (ms) the scraping process itself stalled: the machine delayed the client. */
  readonly slowestScrapeClientMs: number;
  /** Scrapes that took scrapeMaxMs (150 ms) or more. */
  readonly overMaxGoal: number;
  /**
   * The slowest scrape less the time the scraper itself stalled during it (ms): the exporter's
   * answer as a scraper on a machine of its own (Prometheus) would see it. Under scrapeP99Ms when
   * no recorded scrape exceeds that (only slower ones are recorded).
   */
  readonly slowestAnswerMs: number;
  /**
   * The longest time a scrape waited (ms) while neither the exporter's event loop nor the scraper's
   * was held (no stall of either overlapped it): what the exporter itself made it wait for, such as
   * a swap into the store or its compression threads. Under scrapeP99Ms as slowestAnswerMs is.
   */
  readonly longestWaitMs: number;
}

/** Told what a cell is doing, for the bench's progress lines. */
export type Progress = (message: string) => void;
