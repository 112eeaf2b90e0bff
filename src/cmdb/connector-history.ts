/**
 * Reading the connector run history at real scale (docs/cmdb-api-notes.md): about 100 MB in pages
 * of ~25 MB on a busy stack, for data that changes about once a day.
 *
 * - A full scan reads every page, in the service's own (unsorted) order, and keeps only the newest
 *   row per (bridge_name, profile name). It runs first, and again every connectorFullScanInterval;
 *   it is the only read that drops connectors that vanished.
 * - In between, an incremental scan asks for `sort=_time,desc` in small pages and stops at the
 *   first page that reaches rows older than the newest `_time` held minus a safety margin, merging
 *   the new rows into what is held. Connectors absent from that window keep their last known run.
 * - The sort is trusted only after checking it on every page received (non-increasing `_time`,
 *   also across pages). An unsorted page turns that poll into a full scan, logged and counted, and
 *   no incremental scan is tried again until the next scheduled full scan.
 *
 * Memory is proportional to the number of keys, never to the history: each page is reduced as it
 * arrives (page-reducer.ts) and only the kept rows survive it.
 */
import { NewestRuns } from '../api/connector-runs.js';
import type { PageFields } from '../api/endpoints.js';
import type { ConnectorRun } from '../api/schemas.js';
import { nextPageDecision } from './paging.js';
import type { PageTimes } from './page-reducer.js';

/**
 * Rows written up to this long before the newest one held are still read by an incremental scan
 * (a run row that lands a little late). Older late rows wait for the next full scan.
 */
export const INCREMENTAL_MARGIN_SECONDS = 900;
/** Page size of incremental scans (capped by paging.connectorPageSize): a day of changes fits in a few. */
export const INCREMENTAL_PAGE_SIZE = 500;
export const INCREMENTAL_SORT = '_time,desc';

export type ScanKind = 'full' | 'incremental';

/** What one page says to the reader: its size, paging fields and sort facts (its rows stay with the scan). */
export interface HistoryPage extends PageTimes {
  /** Rows on the page. */
  readonly count: number;
  readonly fields: PageFields;
}

/** One read of the history: pages go in, the newest row per key of all of them comes out. */
export interface HistoryScan {
  /** GET one page: `sort` undefined for the service's own order. */
  fetchPage(page: number, size: number, sort: string | undefined): Promise<HistoryPage>;
  /** The newest row per key over every page read, validated. */
  rows(): Promise<ConnectorRun[]>;
  /** The scan is abandoned: forget what it kept. */
  drop(): void;
}

export interface HistoryIo {
  scan(): HistoryScan;
  scanned(kind: ScanKind): void;
  /** An incremental scan met a page that is not sorted by `_time` descending. */
  unsorted(page: number): void;
  truncated(rowsRead: number): void;
}

export interface HistorySettings {
  readonly pageSize: number;
  readonly maxPages: number;
  /** The configured connectorSort, used by full scans. */
  readonly fullScanSort?: string;
  readonly fullScanIntervalSeconds: number;
  readonly timeZone: string;
}

export class ConnectorHistoryReader {
  private held: NewestRuns | undefined;
  /** What the last read returned: returned again (the same array) while nothing changed. */
  private lastResult: ConnectorRun[] | undefined;
  private lastFullScanAt: number | undefined;
  /** Set by an unsorted page: no incremental scan before this time (the next scheduled full scan). */
  private distrustUntil: number | undefined;

  constructor(private settings: HistorySettings) {}

  /**
   * The stack's next runtime (a reload) takes this reader over with its settings: what is held, when
   * the last full scan ran and whether the sort is distrusted all stay, so its next poll is what this
   * runtime's next poll would have been. Only between reads (the old runtime's polls have ended).
   */
  reconfigure(settings: HistorySettings): this {
    this.settings = settings;
    return this;
  }

  /**
   * The newest row per key after this poll. `now` in unix seconds. When an incremental read found
   * nothing newer, the very array of the previous read is returned, so the caller can skip mapping.
   */
  async read(io: HistoryIo, now: number): Promise<ConnectorRun[]> {
    if (this.incrementalAllowed(now)) {
      const merged = await this.incremental(io, now);
      if (merged) {
        io.scanned('incremental');
        if (merged.changed || !this.lastResult) this.lastResult = merged.held.runs();
        return this.lastResult;
      }
    }
    this.lastResult = (await this.full(io, now)).runs();
    return this.lastResult;
  }

  /** Reads pages into `scan` until `more` says stop; the scan is dropped when a read fails. */
  private async pages(scan: HistoryScan, each: (page: number) => Promise<boolean>): Promise<void> {
    try {
      for (let page = 0; page < this.settings.maxPages; page++) if (!(await each(page))) return;
    } catch (err) {
      scan.drop();
      throw err;
    }
  }

  private incrementalAllowed(now: number): boolean {
    if (!this.held || this.lastFullScanAt === undefined) return false;
    if (now - this.lastFullScanAt >= this.settings.fullScanIntervalSeconds) return false;
    return this.distrustUntil === undefined || now >= this.distrustUntil;
  }

  private async full(io: HistoryIo, now: number): Promise<NewestRuns> {
    const { pageSize, maxPages, fullScanSort, timeZone } = this.settings;
    const scan = io.scan();
    let read = 0;
    await this.pages(scan, async (page) => {
      const p = await scan.fetchPage(page, pageSize, fullScanSort);
      read += p.count;
      const decision = nextPageDecision(page, p.count, p.fields, maxPages);
      if (decision === 'truncated') io.truncated(read);
      return decision === 'next';
    });
    const fresh = new NewestRuns(timeZone).addAll(await scan.rows());
    // Replaced whole only once every page was read: a failed scan keeps what was held.
    this.held = fresh;
    this.lastFullScanAt = now;
    io.scanned('full');
    return fresh;
  }

  /** The merged rows, or undefined when the sort cannot be trusted (the caller scans in full). */
  private async incremental(io: HistoryIo, now: number): Promise<{ held: NewestRuns; changed: boolean } | undefined> {
    const held = this.held;
    const newest = held?.newestTime();
    if (!held || newest === undefined) return undefined;
    const cutoff = newest - INCREMENTAL_MARGIN_SECONDS;
    const size = Math.min(INCREMENTAL_PAGE_SIZE, this.settings.pageSize);
    const scan = io.scan();
    let previousLast: number | undefined;
    let trusted = true;
    await this.pages(scan, async (page) => {
      const p = await scan.fetchPage(page, size, INCREMENTAL_SORT);
      const continues = previousLast === undefined || p.first === undefined || p.first <= previousLast;
      if (!p.sorted || !continues) {
        io.unsorted(page);
        trusted = false;
        return false;
      }
      previousLast = p.last ?? previousLast;
      if (p.count === 0 || (p.min !== undefined && p.min < cutoff)) return false;
      return nextPageDecision(page, p.count, p.fields, this.settings.maxPages) === 'next';
    });
    if (!trusted) {
      scan.drop();
      this.distrustUntil = now + this.settings.fullScanIntervalSeconds;
      return undefined;
    }
    // Merged into a copy: a poll that fails half-way leaves what is held untouched.
    const merged = new NewestRuns(this.settings.timeZone).addAll(held.runs());
    let changed = false;
    for (const run of await scan.rows()) changed = merged.add(run) || changed;
    this.held = merged;
    return { held: merged, changed };
  }
}
