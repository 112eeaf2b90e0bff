/**
 * Reading the connector run history at the real service's size and pace: full scans (full-walk.ts)
 * that run as long as their pages keep coming, small incremental reads in between, the sort checked
 * on every page; a restart goes on from a full scan's pages read (connector-history-state.ts), and a
 * backfill's `everyRun` hands every row to a visitor. docs/design.md ("The connector history")
 * explains each choice. Memory follows the keys, never the history: pages are reduced as they arrive.
 */
import { NewestRuns, runForDisk } from '../../api/connector-runs.js';
import { JsonList } from '../../json-list.js';
import type { ConnectorRun } from '../../api/schemas.js';
import type { ConnectorHistoryRead } from '../../api/endpoints.js';
import type { HistoryIo, HistoryPage, HistoryScan, HistorySettings, ScanProgress } from './connector-history-types.js';
import { HISTORY_STATE_VERSION, HistoryReaderStateSchema, type HistoryReaderState, type ScanPosition } from './connector-history-state.js';
import { continues, fullScanSort, walkFull, type ScanCursor } from './full-walk.js';
import { sizeDividing, walkPages, type WalkPosition, type Walked } from './pages.js';
import { ScanTracker } from './scan-tracker.js';
export type { EveryRunPage, HistoryIo, HistoryPage, HistoryScan, HistorySettings, ScanKind, ScanProgress } from './connector-history-types.js';
export { continues, FULL_SCAN_SORT, MIN_PAGE_SIZE } from './full-walk.js';

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
/** Rows this much newer than the scan's start (clock skew) still count as written during the scan. */
const CLOCK_SLACK_SECONDS = 60;
/** Incremental reads off after a second unsorted page in a row: this long, doubling per further one. */
export const UNSORTED_BACKOFF_SECONDS = 3600;

/** A full scan in progress: its session, where its next page is, and what its earlier part read (`base`). */
interface FullScan extends ScanCursor {
  readonly scan: HistoryScan;
  readonly sort: string;
  readonly base?: NewestRuns;
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
  private readonly tracker = new ScanTracker();
  /** The full scan in progress, and the last look at what its pages kept (prepareState). */
  private scanning: FullScan | undefined;
  private kept: { readonly position: ScanPosition; readonly runs: ConnectorRun[] } | undefined;
  /** A full scan left half-way (by an earlier process, or failed): the next full scan goes on from it. */
  private resume: { readonly position: ScanPosition; readonly runs: NewestRuns } | undefined;

  constructor(private settings: HistorySettings) {
    this.fullPageSize = settings.pageSize;
  }

  /**
   * The stack's next runtime (a reload, between reads) takes this reader over with its settings:
   * everything it learned stays, so its next poll is what this runtime's would have been. A smaller
   * configured page size applies at once.
   */
  reconfigure(settings: HistorySettings): this {
    this.settings = settings;
    this.fullPageSize = Math.min(this.fullPageSize, settings.pageSize);
    return this;
  }

  /**
   * What a restart keeps (--storage.path), with the pages of a full scan in progress as of the last
   * prepareState; undefined before anything is known. Rows are reduced as written, a slice at a time (JsonList).
   */
  exportState(): HistoryReaderState | undefined {
    const scan = this.scanning && this.kept ? this.kept : this.resume && { position: this.resume.position, runs: this.resume.runs.runs() };
    const cursor = this.held !== undefined && this.lastFullScanAt !== undefined;
    if (!cursor && !scan) return undefined;
    return {
      v: HISTORY_STATE_VERSION,
      timeZone: this.settings.timeZone,
      runs: new JsonList(cursor && this.held ? this.held.runs() : [], runForDisk),
      ...(cursor ? { lastFullScanAt: this.lastFullScanAt } : {}),
      ...(this.offUntil === undefined ? {} : { offUntil: this.offUntil }),
      unsortedStreak: this.unsortedStreak,
      pageSize: this.fullPageSize,
      ...(scan ? { scan: { ...scan.position, runs: new JsonList(scan.runs, runForDisk) } } : {}),
    };
  }

  /**
   * Takes from the page worker what the full scan in progress kept so far, for exportState (which
   * is synchronous). The position is taken first: the rows then hold at least the pages before it.
   */
  async prepareState(): Promise<void> {
    const s = this.scanning;
    const position = s && this.tracker.current?.endedAt === undefined ? this.tracker.position(s.sort, s.next) : undefined;
    if (!s || !position || this.kept?.position.pagesRead === position.pagesRead) return;
    const rows = await s.scan.peek();
    if (this.scanning !== s) return;
    this.kept = { position, runs: new NewestRuns(this.settings.timeZone).addAll(s.base?.runs() ?? []).addAll(rows).runs() };
  }

  /** Grows with every page of a full scan read: what prepareState would keep has changed. */
  scanMark(): number {
    return this.tracker.fullPages;
  }

  /**
   * A reader that goes on from `state` (an earlier process's exportState) as reconfigure() does from
   * an earlier runtime. Undefined when `state` is not valid in this version, or was read in another time zone.
   */
  static fromState(settings: HistorySettings, state: unknown): ConnectorHistoryReader | undefined {
    const parsed = HistoryReaderStateSchema.safeParse(state);
    if (!parsed.success || parsed.data.timeZone !== settings.timeZone) return undefined;
    const s = parsed.data;
    const reader = new ConnectorHistoryReader(settings);
    if (s.lastFullScanAt !== undefined) {
      reader.held = new NewestRuns(settings.timeZone).addAll(s.runs);
      reader.lastRuns = reader.held.runs();
      reader.lastFullScanAt = s.lastFullScanAt;
    }
    reader.offUntil = s.offUntil;
    reader.unsortedStreak = s.unsortedStreak;
    reader.fullPageSize = Math.min(s.pageSize, settings.pageSize);
    if (s.scan) {
      const { runs, ...position } = s.scan;
      reader.resume = { position, runs: new NewestRuns(settings.timeZone).addAll(runs) };
    }
    return reader;
  }

  /** The scan in progress, or the last one (ended). */
  progress(): ScanProgress | undefined {
    return this.tracker.current;
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
  async read(io: HistoryIo, now: number): Promise<ConnectorHistoryRead> {
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

  private async full(io: HistoryIo, now: number): Promise<NewestRuns> {
    const { timeZone } = this.settings;
    const sort = fullScanSort(this.settings);
    // A scan an earlier process left half-way goes on from its next page, under the same sort.
    const resume = this.resume && continues(this.resume.position, this.settings) ? this.resume : undefined;
    this.resume = undefined;
    const scan = io.scan([]);
    const next = resume ? { page: resume.position.page, size: resume.position.size } : { page: 0, size: this.fullPageSize };
    const scanning: FullScan = { scan, sort, next, ...(resume ? { base: resume.runs } : {}) };
    this.scanning = scanning;
    this.tracker.begin(io, 'full', next.size, resume?.position);
    let slowest = 0;
    let walked: Walked;
    try {
      walked = await this.walkFull(io, (page, size) => scan.fetchPage(page, size, sort), (p) => (slowest = Math.max(slowest, p.seconds ?? 0)), scanning, resume?.position);
    } catch (err) {
      // A failed or stopped scan (a page that kept failing, a shutdown) goes on from here next time.
      await this.keepForLater(scanning);
      scan.drop();
      this.endFull(io);
      throw err;
    }
    if (walked.truncated) io.truncated(walked.rows);
    const rows = await scan.rows();
    this.endFull(io);
    // A truncated scan did not see every row: merged, so that no held row is replaced by an older one.
    const base = walked.truncated && this.held ? new NewestRuns(timeZone).addAll(this.held.runs()) : new NewestRuns(timeZone);
    const fresh = base.addAll(resume?.runs.runs() ?? []).addAll(rows);
    // Replaced only once every page was read: a failed scan keeps what was held.
    this.held = fresh;
    this.lastFullScanAt = now;
    this.growBack(io, slowest);
    io.scanned('full', walked.pages);
    return fresh;
  }

  /** What the scan read so far becomes what the next full scan goes on from (in this process, or the next: exportState). */
  private async keepForLater(s: FullScan): Promise<void> {
    const position = this.tracker.position(s.sort, s.next);
    if (!position || (position.pagesRead === 0 && !s.base)) return;
    try {
      this.resume = { position, runs: new NewestRuns(this.settings.timeZone).addAll(s.base?.runs() ?? []).addAll(await s.scan.peek()) };
    } catch {
      // The page worker is gone: the next scan reads those pages again.
    }
  }

  private endFull(io: HistoryIo): void {
    this.scanning = undefined;
    this.kept = undefined;
    this.tracker.end(io);
  }

  /**
   * Every run of the history, page by page to `visit` with where the scan stands after it (a
   * backfill): a full scan's pages, from `from`'s next one when it `continues` under the settings of
   * now. What is held for the daemon's reads is left as it is.
   */
  async everyRun(io: HistoryIo, visit: (rows: readonly ConnectorRun[], at: ScanPosition) => void, from?: ScanPosition): Promise<Walked> {
    const sort = fullScanSort(this.settings);
    const start = from && continues(from, this.settings) ? from : undefined;
    const cursor: ScanCursor = { next: start ? { page: start.page, size: start.size } : { page: 0, size: this.fullPageSize } };
    this.tracker.begin(io, 'full', cursor.next.size, start);
    try {
      const walked = await this.walkFull(io, (page, size) => io.everyRunPage(page, size, sort), (p) => visit(p.rows, this.tracker.position(sort, cursor.next) as ScanPosition), cursor, start);
      if (walked.truncated) io.truncated(walked.rows);
      return walked;
    } finally {
      this.tracker.end(io);
    }
  }

  /** The pages of a full scan from `cursor` (full-walk.ts), at the page size this reader learned. */
  private walkFull<P extends HistoryPage>(io: HistoryIo, fetch: (page: number, size: number) => Promise<P>, seen: (page: P) => void, cursor: ScanCursor, from?: ScanPosition): Promise<Walked> {
    const shrunk = (size: number) => (this.fullPageSize = size);
    const start: WalkPosition | undefined = from && { rows: from.rowsRead, pages: from.pagesRead };
    return walkFull({ io, tracker: this.tracker, settings: this.settings, shrunk, cursor, fetch, seen, ...(start ? { from: start } : {}) });
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
    const start = this.tracker.begin(io, 'incremental', INCREMENTAL_FIRST_PAGE).startedAt;
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
          this.tracker.advance(io, p, size, page);
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
      }));
    } catch (err) {
      scan.drop();
      this.tracker.end(io);
      throw err;
    }
    if (unsortedPage !== undefined) {
      scan.drop();
      this.tracker.end(io);
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
    this.tracker.end(io);
    io.scanned('incremental', pages);
    // Merged into a copy: a poll that fails half-way leaves what is held untouched.
    const merged = new NewestRuns(this.settings.timeZone).addAll(held.runs());
    let changed = false;
    for (const run of rows) changed = merged.add(run) || changed;
    this.held = merged;
    return { held: merged, changed };
  }
}
