/**
 * What the connector history reader keeps across a restart (--storage.path): its cursor, and the
 * pages of a full scan in progress, in a small versioned form of its own.
 * ConnectorHistoryReader.exportState makes it, fromState reads it back; a state of another version,
 * or one that does not validate, is no state (the next read scans in full).
 *
 * A full scan at the real service's pace takes tens of minutes (~50 s a page of 2,000 rows); a
 * restart in its middle goes on from the pages read (`scan`): the newest row per key of those pages
 * and the position of the next page, so that a crash loop still finishes the first scan.
 */
import { z } from 'zod';
import { ConnectorRunSchema, type ConnectorRun } from '../../api/schemas.js';
import type { JsonList } from '../../json-list.js';

export const HISTORY_STATE_VERSION = 1;

/** Where a full scan in progress stands: the next page to ask, and what was read before it. */
export interface ScanPosition {
  /** The sort the scan asks for: a scan under another sort is not continued. */
  readonly sort: string;
  /** The next page (0-based) at `size` rows. */
  readonly page: number;
  readonly size: number;
  /** Unix seconds when the scan began. */
  readonly startedAt: number;
  readonly pagesRead: number;
  readonly rowsRead: number;
  readonly bytes: number;
  readonly pagesTotal?: number;
}

export interface HistoryReaderState {
  readonly v: typeof HISTORY_STATE_VERSION;
  /** The zone the rows' times were read in: rows read in another zone are not restored. */
  readonly timeZone: string;
  /** The newest row per key, written reduced by runForDisk (no free text): a JsonList when made, an array when read. */
  readonly runs: JsonList<ConnectorRun> | readonly ConnectorRun[];
  /** Unix seconds of the last full scan: the next one is due connectorFullScanInterval after it. */
  readonly lastFullScanAt?: number;
  /** Incremental reads off until then (unix seconds), after repeated unsorted pages. */
  readonly offUntil?: number;
  readonly unsortedStreak: number;
  /** The page size full scans had learned (halved after timeouts). */
  readonly pageSize: number;
  /** A full scan in progress: its position and the newest row per key of its pages read (reduced by runForDisk). */
  readonly scan?: ScanPosition & { readonly runs: JsonList<ConnectorRun> | readonly ConnectorRun[] };
}

const finite = z.number().finite();
const count = z.number().int().min(0);

/**
 * A full scan as kept: its position and rows in their disk form (runForDisk). The daemon's state
 * keeps the newest row per key of the pages read; a backfill's answers keep one of these per page,
 * the rows of the page its range needs (src/backfill/connector-scan.ts).
 */
export const ScanStateSchema = z.object({
  sort: z.string(),
  page: count,
  size: z.number().int().min(1),
  startedAt: finite,
  pagesRead: count,
  rowsRead: count,
  bytes: count,
  pagesTotal: count.optional(),
  runs: z.array(ConnectorRunSchema),
});

export const HistoryReaderStateSchema = z.object({
  v: z.literal(HISTORY_STATE_VERSION),
  timeZone: z.string(),
  runs: z.array(ConnectorRunSchema),
  lastFullScanAt: finite.optional(),
  offUntil: finite.optional(),
  unsortedStreak: count,
  pageSize: z.number().int().min(1),
  scan: ScanStateSchema.optional(),
});
