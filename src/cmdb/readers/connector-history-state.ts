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

const finite = z.number().finite();
const count = z.number().int().min(0);

/**
 * A full scan as kept: its position and rows in their disk form (runForDisk). The daemon's state
 * keeps the newest row per key of the pages read; a backfill's answers keep one of these per page,
 * the rows of the page its range needs (src/backfill/connector-scan.ts).
 */
export const ScanStateSchema = z.object({
  /** The sort the scan asks for: a scan under another sort is not continued. */
  sort: z.string(),
  /** The next page (0-based) at `size` rows. */
  page: count,
  size: z.number().int().min(1),
  /** Unix seconds when the scan began. */
  startedAt: finite,
  pagesRead: count,
  rowsRead: count,
  bytes: count,
  /** Pages the scan expects at its current page size (from the service's totalPages); undefined until known. */
  pagesTotal: count.optional(),
  runs: z.array(ConnectorRunSchema),
});

export const HistoryReaderStateSchema = z.object({
  v: z.literal(HISTORY_STATE_VERSION),
  /** The zone the rows' times were read in: rows read in another zone are not restored. */
  timeZone: z.string(),
  /** The newest row per key, reduced by runForDisk (no free text). */
  runs: z.array(ConnectorRunSchema),
  /** Unix seconds of the last full scan: the next one is due connectorFullScanInterval after it. */
  lastFullScanAt: finite.optional(),
  /** Incremental reads off until then (unix seconds), after repeated unsorted pages. */
  offUntil: finite.optional(),
  unsortedStreak: count,
  /** The page size full scans had learned (halved after timeouts). */
  pageSize: z.number().int().min(1),
  /** A full scan in progress: its position and the newest row per key of its pages read. */
  scan: ScanStateSchema.optional(),
});

/** Where a full scan in progress stands: the next page to ask, and what was read before it. */
export type ScanPosition = Readonly<Omit<z.infer<typeof ScanStateSchema>, 'runs'>>;

/** Runs as written (a JsonList, reduced a slice at a time) or as read back (an array). */
type Runs = JsonList<ConnectorRun> | readonly ConnectorRun[];

export type HistoryReaderState = Readonly<Omit<z.infer<typeof HistoryReaderStateSchema>, 'runs' | 'scan'>> & {
  readonly runs: Runs;
  readonly scan?: ScanPosition & { readonly runs: Runs };
};
