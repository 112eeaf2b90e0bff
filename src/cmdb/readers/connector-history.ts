/**
 * Reading the connector run history at real scale and pace (docs/cmdb-api-notes.md): about 100 MB in pages of ~25 MB on a
 * busy stack, ~2.3 s per 100 rows (tens of seconds a page, minutes a scan), for data that changes
 * about once a day. docs/design.md ("The connector history") explains the whole of it.
 *
 * - A full scan reads every page sorted by `_time` descending (unless connectorSort says otherwise)
 *   and keeps only the newest row per (bridge_name, profile name). It runs first, and again every
 *   connectorFullScanInterval; a complete one is the only read that drops connectors that vanished.
 *   Sorted, a scan cut at paging.maxPages keeps the newest runs, and rows written during the scan
 *   only shift rows already read onto the next page. A truncated scan is merged into what is held,
 *   never replaces it: a held row is replaced only by a newer one.
 * - A full scan is not bound to the poll interval: it runs for as long as its pages keep coming
 *   (the poller's deadline follows `progress()`), so a scan longer than the interval finishes.
 * - Pages that fit their time: a page whose attempt times out is asked again at half the size (from
 *   the rows read so far, so nothing is skipped or read twice), down to MIN_PAGE_SIZE; the size is
 *   kept for later scans of the stack, and doubles back (up to paging.connectorPageSize) after a
 *   scan whose slowest page took under a quarter of timeoutSeconds. At the smallest size a page
 *   gets the stack's retries; then the scan fails.
 * - In between, an incremental scan asks for `sort=_time,desc`, starting with a page of 25 rows and
 *   doubling, and reads on only while the page held something new and is all newer than the newest
 *   `_time` held minus a margin: with nothing new it reads one page of 25 rows. A late row (written
 *   after the last read with an older `_time`) is read when it lands on a page read for new rows,
 *   else by the next full scan.
 * - The sort is checked on every page: `_time` never increases down a page, nor across pages,
 *   except for rows the scan already knows (shifted down by rows written at the top) or written
 *   after the scan began. A page that is still unsorted turns that poll into a full scan; a second
 *   one in a row switches incremental reads off for an hour, doubling up to
 *   connectorFullScanInterval (cmdb_connector_incremental_off_until_timestamp_seconds).
 *
 * Memory is proportional to the number of keys, never to the history: each page is reduced as it
 * arrives (scan-reducers.ts) and only the kept rows survive it.
 *
 * A backfill needs every run of its range, not only the newest per key: `everyRun` hands every row
 * of a full scan to a visitor, page by page, with the same page sizes and the same halving of a
 * timed-out page. Every loop here is the one paging loop (pages.ts); the IO is connector-io.ts.
 */
import { NewestRuns, runForDisk } from '../../api/connector-runs.js';
import { JsonList } from '../../json-list.js';
import type { PageFields } from '../../api/endpoints.js';
import type { ConnectorRun } from '../../api/schemas.js';
import type { KnownTimes, PageTimes } from '../scan-reducers.js';
import { HISTORY_STATE_VERSION, HistoryReaderStateSchema, type HistoryReaderState } from './connector-history-state.js';
import { sizeDividing, walkPages, type Walked } from './pages.js';

/**
 * Rows written up to this long before the newest one held are still read by an incremental scan
 * (a run row that lands a little late). Older late rows wait for the next full scan.
 */
export const INCREMENTAL_MARGIN_SECONDS = 900;
/** First page of an incremental scan: with nothing new, the whole read. */
export const INCREMENTAL_FIRST_PAGE = 25;
/** Largest page of incremental scans (capped by paging.connectorPageSize): 25 doubled four times. */
export const INCREMENTAL_PAGE_SIZE = 400;
export const INCREMENTAL_SORT = '_time,desc';
/** Full scans ask for this order unless connectorSort is set: a truncated scan then keeps the newest rows. */
export const FULL_SCAN_SORT = '_time,desc';
/** Page timeouts halve the page size down to this. */
export const MIN_PAGE_SIZE = 50;
/** Rows this much newer than the scan's start (clock skew) still count as written during the scan. */
const CLOCK_SLACK_SECONDS = 60;
/** Incremental reads off after a second unsorted page in a row: this long, doubling per further one. */
export const UNSORTED_BACKOFF_SECONDS = 3600;

export type ScanKind = 'full' | 'incremental';

/** What one page says to the reader: its size, paging fields and sort facts (its rows stay with the scan). */
export interface HistoryPage extends PageTimes {
  /** Rows on the page. */
  readonly count: number;
  readonly fields: PageFields;
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
  /** The scan is abandoned: forget what it kept. */
  drop(): void;
}

/** Where a scan stands: pages read of the expected total, bytes, start (the status page and metrics). */
export interface ScanProgress {
  readonly kind: ScanKind;
  /** Unix seconds. */
  readonly startedAt: number;
  readonly pagesRead: number;
  /** Pages the scan expects at its current page size (from the service's totalPages); undefined until known. */
  readonly pagesTotal?: number;
  readonly rowsRead: number;
  readonly bytes: number;
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

/** What a read returned: `changed` false when the rows are those of the previous read. */
export interface HistoryResult {
  readonly changed: boolean;
  readonly runs: ConnectorRun[];
}

export class ConnectorHistoryReader {
  private held: NewestRuns | undefined;
  private lastRuns: ConnectorRun[] | undefined;
  private lastFullScanAt: number | undefined;
  /** Set by a repeated unsorted page: no incremental scan before this time. */
  private offUntil: number | undefined;
  private unsortedStreak = 0;
  /** Page size of full scans, halved by page timeouts. */
  private fullPageSize: number;
  private current: ScanProgress | undefined;

  constructor(private settings: HistorySettings) {
    this.fullPageSize = settings.pageSize;
  }

  /**
   * The stack's next runtime (a reload) takes this reader over with its settings: what is held, when
   * the last full scan ran, the learned page size and whether incremental reads are off all stay, so
   * its next poll is what this runtime's next poll would have been. Only between reads (the old
   * runtime's polls have ended). A smaller configured page size applies at once.
   */
  reconfigure(settings: HistorySettings): this {
    this.settings = settings;
    this.fullPageSize = Math.min(this.fullPageSize, settings.pageSize);
    return this;
  }

  /**
   * What a restart keeps (--storage.path): the rows held, when the last full scan ran, the learned
   * page size and whether incremental reads are off; undefined before a first full scan. Between
   * reads the rows are those of the last read; during one, those before it.
   */
  exportState(): HistoryReaderState | undefined {
    if (!this.held || this.lastFullScanAt === undefined) return undefined;
    return {
      v: HISTORY_STATE_VERSION,
      timeZone: this.settings.timeZone,
      // Reduced as they are written, a slice at a time (JsonList): not all 10,000 at once here.
      runs: new JsonList(this.held.runs(), runForDisk),
      lastFullScanAt: this.lastFullScanAt,
      ...(this.offUntil === undefined ? {} : { offUntil: this.offUntil }),
      unsortedStreak: this.unsortedStreak,
      pageSize: this.fullPageSize,
    };
  }

  /**
   * A reader that goes on from `state` (exportState of an earlier process) under `settings`, as
   * reconfigure() goes on from an earlier runtime: its first read is incremental unless a full scan
   * is due. Undefined when `state` is not a valid state of this version, or its times were read in
   * another time zone.
   */
  static fromState(settings: HistorySettings, state: unknown): ConnectorHistoryReader | undefined {
    const parsed = HistoryReaderStateSchema.safeParse(state);
    if (!parsed.success || parsed.data.timeZone !== settings.timeZone) return undefined;
    const s = parsed.data;
    const reader = new ConnectorHistoryReader(settings);
    reader.held = new NewestRuns(settings.timeZone).addAll(s.runs);
    reader.lastRuns = reader.held.runs();
    reader.lastFullScanAt = s.lastFullScanAt;
    reader.offUntil = s.offUntil;
    reader.unsortedStreak = s.unsortedStreak;
    reader.fullPageSize = Math.min(s.pageSize, settings.pageSize);
    return reader;
  }

  /** The scan in progress, or the last one (ended). */
  progress(): ScanProgress | undefined {
    return this.current;
  }

  /** Incremental reads are off until this time (unix seconds), after repeated unsorted pages. */
  incrementalOffUntil(now: number): number | undefined {
    return this.offUntil !== undefined && now < this.offUntil ? this.offUntil : undefined;
  }

  /** The page size full scans use now. */
  pageSize(): number {
    return this.fullPageSize;
  }

  /** The newest row per key after this poll. `now` in unix seconds. */
  async read(io: HistoryIo, now: number): Promise<HistoryResult> {
    if (this.incrementalAllowed(now)) {
      const merged = await this.incremental(io, now);
      if (merged) {
        const changed = merged.changed || !this.lastRuns;
        if (changed) this.lastRuns = merged.held.runs();
        return { changed, runs: this.lastRuns as ConnectorRun[] };
      }
    }
    this.lastRuns = (await this.full(io, now)).runs();
    return { changed: true, runs: this.lastRuns };
  }

  private incrementalAllowed(now: number): boolean {
    if (!this.held || this.lastFullScanAt === undefined) return false;
    if (now - this.lastFullScanAt >= this.settings.fullScanIntervalSeconds) return false;
    return this.offUntil === undefined || now >= this.offUntil;
  }

  private begin(io: HistoryIo, kind: ScanKind, pageSize: number): ScanProgress {
    const at = io.now();
    this.current = { kind, startedAt: at, pagesRead: 0, rowsRead: 0, bytes: 0, lastPageAt: at, pageSize };
    io.progress(this.current);
    return this.current;
  }

  private advance(io: HistoryIo, p: HistoryPage, pageSize: number, page: number): void {
    const c = this.current;
    if (!c) return;
    const total = p.fields.totalPages;
    // Pages read plus what the service says is left at this size.
    const pagesTotal = total == null ? c.pagesTotal : c.pagesRead + 1 + Math.max(0, total - (page + 1));
    this.current = {
      ...c,
      pagesRead: c.pagesRead + 1,
      rowsRead: c.rowsRead + p.count,
      bytes: c.bytes + (p.bytes ?? 0),
      lastPageAt: io.now(),
      pageSize,
      ...(pagesTotal === undefined ? {} : { pagesTotal }),
    };
    io.progress(this.current);
  }

  private end(io: HistoryIo): void {
    if (!this.current) return;
    this.current = { ...this.current, endedAt: io.now() };
    io.progress(this.current);
  }

  private async full(io: HistoryIo, now: number): Promise<NewestRuns> {
    const { timeZone } = this.settings;
    const sort = this.settings.fullScanSort ?? FULL_SCAN_SORT;
    const scan = io.scan([]);
    this.begin(io, 'full', this.fullPageSize);
    let slowest = 0;
    let walked: Walked;
    try {
      walked = await this.walkFull(io, (page, size) => scan.fetchPage(page, size, sort), (p) => (slowest = Math.max(slowest, p.seconds ?? 0)));
    } catch (err) {
      scan.drop();
      this.end(io);
      throw err;
    }
    if (walked.truncated) io.truncated(walked.rows);
    const rows = await scan.rows();
    this.end(io);
    // A truncated scan did not see every row: merged, so that no held row is replaced by an older one.
    const base = walked.truncated && this.held ? new NewestRuns(timeZone).addAll(this.held.runs()) : new NewestRuns(timeZone);
    const fresh = base.addAll(rows);
    // Replaced only once every page was read: a failed scan keeps what was held.
    this.held = fresh;
    this.lastFullScanAt = now;
    this.growBack(io, slowest);
    io.scanned('full', walked.pages);
    return fresh;
  }

  /**
   * Every run of the history, page by page to `visit` (a backfill): a full scan in the same pages,
   * a timed-out page asked again at half the size. What is held for the daemon's reads is left as it is.
   */
  async everyRun(io: HistoryIo, visit: (rows: readonly ConnectorRun[]) => void): Promise<Walked> {
    const sort = this.settings.fullScanSort ?? FULL_SCAN_SORT;
    this.begin(io, 'full', this.fullPageSize);
    try {
      const walked = await this.walkFull(io, (page, size) => io.everyRunPage(page, size, sort), (p) => visit(p.rows));
      if (walked.truncated) io.truncated(walked.rows);
      return walked;
    } finally {
      this.end(io);
    }
  }

  /**
   * The pages of a full scan: the learned page size; a page that times out is asked again at half
   * the size (from the rows read so far, so nothing is skipped or read twice), down to
   * MIN_PAGE_SIZE, where it gets the stack's retries. The page cap counts pages of the configured
   * size: smaller pages after a timeout read as far.
   */
  private walkFull<P extends HistoryPage>(io: HistoryIo, fetch: (page: number, size: number) => Promise<P>, seen: (page: P) => void): Promise<Walked> {
    const retries = this.settings.retries ?? 3;
    let size = this.fullPageSize;
    // The next page: one on after each page read (a server may send fewer rows than asked), or
    // where the rows read so far end once the size changed.
    let page = 0;
    let timeouts = 0;
    return walkPages<P>({
      next: () => ({ page, size }),
      fetch: async (asked, askedSize) => {
        const p = await fetch(asked, askedSize);
        timeouts = 0;
        page = asked + 1;
        this.advance(io, p, askedSize, asked);
        seen(p);
        return p;
      },
      askAgain: (err, { rows }) => {
        if (!io.isPageTimeout(err)) return false;
        // The same rows again in smaller pages: the new size divides what was read so far.
        const smaller = size > MIN_PAGE_SIZE ? sizeDividing(size / 2, rows, MIN_PAGE_SIZE) : undefined;
        if (smaller === undefined) return ++timeouts <= retries;
        io.pageSize(smaller, size, 'timeout');
        size = this.fullPageSize = smaller;
        page = rows / size;
        return true;
      },
      maxPages: Number.POSITIVE_INFINITY,
      maxRows: this.settings.maxPages * this.settings.pageSize,
    });
  }

  /** After a scan whose every page was fast, the next one asks for pages twice as large (up to the configured size). */
  private growBack(io: HistoryIo, slowest: number): void {
    const limit = this.settings.timeoutSeconds;
    if (limit === undefined || this.fullPageSize >= this.settings.pageSize || slowest >= limit / 4) return;
    const next = Math.min(this.settings.pageSize, this.fullPageSize * 2);
    io.pageSize(next, this.fullPageSize, 'fast');
    this.fullPageSize = next;
  }

  /** The merged rows, or undefined when the sort cannot be trusted (the caller scans in full). */
  private async incremental(io: HistoryIo, now: number): Promise<{ held: NewestRuns; changed: boolean } | undefined> {
    const held = this.held;
    const newest = held?.newestTime();
    if (!held || newest === undefined) return undefined;
    const cutoff = newest - INCREMENTAL_MARGIN_SECONDS;
    const cap = Math.min(INCREMENTAL_PAGE_SIZE, this.settings.pageSize);
    const scan = io.scan(held.times());
    const start = this.begin(io, 'incremental', INCREMENTAL_FIRST_PAGE).startedAt;
    let previousLast: number | undefined;
    let unsortedPage: number | undefined;
    let pages = 0;
    try {
      ({ pages } = await walkPages<HistoryPage>({
        // 25, 25, 50, 100, …: each page starts where the last ended (`size` divides the rows read).
        next: ({ rows }) => {
          const size = rows === 0 ? Math.min(INCREMENTAL_FIRST_PAGE, cap) : (sizeDividing(Math.min(rows, cap), rows, 1) as number);
          return { page: rows / size, size };
        },
        fetch: async (page, size) => {
          const p = await scan.fetchPage(page, size, INCREMENTAL_SORT);
          this.advance(io, p, size, page);
          return p;
        },
        goOn: (p, { page, size }) => {
          // Rows above the last one of the previous page are fine when the scan knows them already
          // (rows written at the top pushed them down) or they were written during the scan.
          const fresh = p.firstFresh;
          const continues = previousLast === undefined || fresh === undefined || fresh <= previousLast || fresh >= start - CLOCK_SLACK_SECONDS;
          if (!p.sorted || !continues) {
            unsortedPage = page;
            return false;
          }
          previousLast = p.last ?? previousLast;
          if (p.count < size) return false;
          // A page with nothing new: the rows below it were there at the last read too.
          if ((p.fresh ?? p.count) === 0) return false;
          return p.min === undefined || p.min >= cutoff;
        },
        maxPages: this.settings.maxPages,
        maxRows: Number.POSITIVE_INFINITY,
      }));
    } catch (err) {
      scan.drop();
      this.end(io);
      throw err;
    }
    if (unsortedPage !== undefined) {
      scan.drop();
      this.end(io);
      this.unsortedStreak++;
      // The first unsorted page costs this poll only; one more in a row switches incremental reads off a while.
      this.offUntil =
        this.unsortedStreak < 2
          ? undefined
          : now + Math.min(this.settings.fullScanIntervalSeconds, UNSORTED_BACKOFF_SECONDS * 2 ** (this.unsortedStreak - 2));
      io.unsorted(unsortedPage, this.offUntil);
      return undefined;
    }
    this.unsortedStreak = 0;
    const rows = await scan.rows();
    this.end(io);
    io.scanned('incremental', pages);
    // Merged into a copy: a poll that fails half-way leaves what is held untouched.
    const merged = new NewestRuns(this.settings.timeZone).addAll(held.runs());
    let changed = false;
    for (const run of rows) changed = merged.add(run) || changed;
    this.held = merged;
    return { held: merged, changed };
  }
}
