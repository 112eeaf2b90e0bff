/**
 * The pages of a full connector history scan, the daemon's and a backfill's alike: which page comes
 * next and at what size, and whether a scan left at a position can go on under the settings of now.
 */
import type { HistoryIo, HistoryPage, HistorySettings } from './connector-history-types.js';
import type { ScanPosition } from './connector-history-state.js';
import { sizeDividing, walkPages, type WalkPosition, type Walked } from './pages.js';
import type { ScanTracker } from './scan-tracker.js';

/** Full scans ask for this order unless connectorSort is set: a truncated scan then keeps the newest rows. */
export const FULL_SCAN_SORT = '_time,desc';
/** Page timeouts halve the page size down to this. */
export const MIN_PAGE_SIZE = 50;

/** The sort full scans ask for under `settings`. */
export function fullScanSort(settings: HistorySettings): string {
  return settings.fullScanSort ?? FULL_SCAN_SORT;
}

/**
 * Whether a scan left at `position` (by an earlier process, a failure, a stopped backfill) goes on
 * under `settings`: the same sort, and pages no larger than configured now (pages of another size
 * would not start where the rows read end). Else the scan starts at its first page.
 */
export function continues(position: ScanPosition, settings: HistorySettings): boolean {
  return position.sort === fullScanSort(settings) && position.size <= settings.pageSize;
}

/** The next page of a scan: moved on as each page arrives. */
export interface ScanCursor {
  next: { page: number; size: number };
}

export interface FullWalk<P extends HistoryPage> {
  readonly io: HistoryIo;
  readonly tracker: ScanTracker;
  readonly settings: HistorySettings;
  /** A timeout halved the page size: later scans keep it. */
  readonly shrunk: (size: number) => void;
  readonly cursor: ScanCursor;
  readonly fetch: (page: number, size: number) => Promise<P>;
  /** After each page, once the cursor and the tracker moved past it. */
  readonly seen: (page: P) => void;
  /** How far the scan got before (a scan that goes on): the page cap counts the whole scan. */
  readonly from?: WalkPosition;
}

/**
 * The pages of a full scan from the cursor: a page that times out is asked again at half the size
 * (from the rows read so far, so nothing is skipped or read twice), down to MIN_PAGE_SIZE, where it
 * gets the stack's retries. The page cap counts pages of the configured size: smaller pages after
 * a timeout read as far.
 */
export function walkFull<P extends HistoryPage>(w: FullWalk<P>): Promise<Walked> {
  const { io, settings, cursor } = w;
  const retries = settings.retries ?? 3;
  // The next page: one on after each page read (a server may send fewer rows than asked), or
  // where the rows read so far end once the size changed.
  let { page, size } = cursor.next;
  let timeouts = 0;
  return walkPages<P>({
    ...(w.from ? { start: w.from } : {}),
    next: () => ({ page, size }),
    fetch: async (asked, askedSize) => {
      const p = await w.fetch(asked, askedSize);
      timeouts = 0;
      page = asked + 1;
      cursor.next = { page, size: askedSize };
      w.tracker.advance(io, p, askedSize, asked);
      w.seen(p);
      return p;
    },
    askAgain: (err, { rows }) => {
      if (!io.isPageTimeout(err)) return false;
      // The same rows again in smaller pages: the new size divides what was read so far.
      const smaller = size > MIN_PAGE_SIZE ? sizeDividing(size / 2, rows, MIN_PAGE_SIZE) : undefined;
      if (smaller === undefined) return ++timeouts <= retries;
      io.pageSize(smaller, size, 'timeout');
      size = smaller;
      w.shrunk(smaller);
      page = rows / size;
      return true;
    },
    maxRows: settings.maxPages * settings.pageSize,
  });
}
