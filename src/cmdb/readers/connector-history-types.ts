/**
 * What the connector history reader (connector-history.ts) and its IO (connector-io.ts) say to each
 * other: a page's facts, a scan, where a scan stands, and the reader's settings.
 */
import type { ConnectorRun } from '../../api/schemas.js';
import type { KnownTimes, PageTimes } from '../scan-reducers.js';
import type { ScanPosition } from './connector-history-state.js';
import type { PageRead } from './pages.js';

export type ScanKind = 'full' | 'incremental';

/** What one page says to the reader: its size, paging fields and sort facts (its rows stay with the scan). */
export interface HistoryPage extends PageRead, PageTimes {
  /** Body bytes and seconds the request took (progress and page-size decisions). */
  readonly bytes?: number;
  readonly seconds?: number;
}

/** A page of a scan of every run: its rows, validated, for the visitor. */
export interface EveryRunPage extends HistoryPage {
  readonly rows: readonly ConnectorRun[];
}

/** One read of the history: pages go in, the newest row per key of all of them comes out. */
export interface HistoryScan {
  /** GET one page: `sort` undefined for the service's own order. */
  fetchPage(page: number, size: number, sort: string | undefined): Promise<HistoryPage>;
  /** The newest row per key over every page read, validated. */
  rows(): Promise<ConnectorRun[]>;
  /** The newest row per key over the pages read so far, validated; the scan goes on (a restart keeps them). */
  peek(): Promise<ConnectorRun[]>;
  /** The scan is abandoned: forget what it kept. */
  drop(): void;
}

/** Where a scan stands: pages read of the expected total, bytes, start (the status page and metrics). */
export interface ScanProgress extends Pick<ScanPosition, 'startedAt' | 'pagesRead' | 'pagesTotal' | 'rowsRead' | 'bytes'> {
  readonly kind: ScanKind;
  /** Unix seconds of the last page received (or of the start). */
  readonly lastPageAt: number;
  readonly pageSize: number;
  /** Set when the scan ended (unix seconds). */
  readonly endedAt?: number;
}

export interface HistoryIo {
  /** A new scan; `known` are the newest times per key already held (rows no newer are not new). */
  scan(known: KnownTimes): HistoryScan;
  /** GET one page of a scan of every run, its rows validated. */
  everyRunPage(page: number, size: number, sort: string | undefined): Promise<EveryRunPage>;
  /** Unix seconds, read at every page. */
  now(): number;
  /** A scan ended with every page it needed read: its kind and pages. */
  scanned(kind: ScanKind, pages: number): void;
  /** An incremental scan met a page that is not sorted by `_time` descending; `offUntil` when incremental reads are off. */
  unsorted(page: number, offUntil: number | undefined): void;
  truncated(rowsRead: number): void;
  /** The scan moved (a page arrived) or ended. */
  progress(p: ScanProgress): void;
  /** The full-scan page size changed (a page timed out, or pages came back fast again). */
  pageSize(size: number, previous: number, reason: 'timeout' | 'fast'): void;
  /** True for an error that is a page attempt running out of time. */
  isPageTimeout(err: unknown): boolean;
}

export interface HistorySettings {
  readonly pageSize: number;
  readonly maxPages: number;
  /** The configured connectorSort, used by full scans (default FULL_SCAN_SORT). */
  readonly fullScanSort?: string;
  readonly fullScanIntervalSeconds: number;
  readonly timeZone: string;
  /** One attempt's timeout: pages faster than a quarter of it let the page size grow back. */
  readonly timeoutSeconds?: number;
  /** Timeouts a page may have at the smallest size before the scan fails (retries.max). */
  readonly retries?: number;
}
