/**
 * What the connector history reader keeps across a restart (--storage.path): its cursor, in a small
 * versioned form of its own. ConnectorHistoryReader.exportState makes it, fromState reads it back;
 * a state of another version, or one that does not validate, is no state (the next read scans in full).
 */
import { z } from 'zod';
import { ConnectorRunSchema, type ConnectorRun } from '../../api/schemas.js';
import type { JsonList } from '../../json-list.js';

export const HISTORY_STATE_VERSION = 1;

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
}

const finite = z.number().finite();

export const HistoryReaderStateSchema = z.object({
  v: z.literal(HISTORY_STATE_VERSION),
  timeZone: z.string(),
  runs: z.array(ConnectorRunSchema),
  lastFullScanAt: finite.optional(),
  offUntil: finite.optional(),
  unsortedStreak: z.number().int().min(0),
  pageSize: z.number().int().min(1),
});
