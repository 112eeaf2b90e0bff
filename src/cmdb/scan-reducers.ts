/**
 * The reduction of the connector history's pages, one scan at a time: parse a page, keep per
 * (bridge_name, profile name) the newest row of every page of the scan, and say what the reader
 * needs of the page (its sort, its times, how many of its rows are new). It runs in the page
 * worker (page-worker.ts) for large pages and on the calling thread for small ones, with the same
 * rules as the rest of the exporter: the key is `runKey`, the time is `parseTimestamp` of `_time`,
 * both imported, not restated.
 */
import { runKey } from '../api/connector-runs.js';
import { capDepth } from '../api/depth.js';
import type { ConnectorRun } from '../api/schemas.js';
import { parseTimestamp } from '../time.js';

export interface PageTimes {
  /** Every row has a `_time` and they never increase down the page. */
  readonly sorted: boolean;
  /** `_time` of the first and last row, and the smallest (seconds); absent on an empty page. */
  readonly first?: number;
  readonly last?: number;
  readonly min?: number;
  /**
   * Rows of the page that are new to the scan: neither kept already (from an earlier page of the
   * scan, or from what the reader held when it began) with the same or a newer `_time`.
   */
  readonly fresh?: number;
  /** `_time` of the first new row of the page (in page order); absent when none is new. */
  readonly firstFresh?: number;
}

/** What reading one page says; its rows stay with the scan until it finishes. */
export type PageAnswer =
  /** A page object with `content`: its row count, sort facts, and its other keys as sent. */
  | ({ readonly kind: 'page'; readonly count: number; readonly envelope: Record<string, unknown> } & PageTimes)
  /** Any other JSON body (a bare list, a `data` envelope): left whole for the schema to judge. */
  | { readonly kind: 'other'; readonly body: unknown }
  | { readonly kind: 'not_json' };

/** Per key (runKey), the newest `_time` already known before a scan begins. */
export type KnownTimes = ReadonlyArray<readonly [string, number]>;

export interface ScanReducers {
  /** Starts scan `scan` knowing these newest times (rows no newer are not new to it). */
  begin(scan: number, known: KnownTimes): void;
  /** Parses one page of scan `scan` and keeps its newest row per key with what the scan holds. */
  page(scan: number, text: string): PageAnswer;
  /** The rows the scan kept, in the order they were read; the scan is forgotten. */
  finish(scan: number): unknown[];
  /** The rows the scan kept so far, as finish() would give them; the scan goes on (a restart keeps them). */
  peek(scan: number): unknown[];
  drop(scan: number): void;
}

interface Kept {
  row: unknown;
  time: number;
  order: number;
}

interface ScanState {
  newest: Map<string, Kept>;
  loose: Kept[];
  order: number;
  known: Map<string, number>;
}

/** The key of a row that can be ordered with certainty, or undefined (an odd bridge_name or profile). */
function keyOf(row: Record<string, unknown>): string | undefined {
  if (typeof row.bridge_name !== 'string') return undefined;
  const p = row.profile;
  const fine =
    typeof p === 'string' ||
    p === null ||
    p === undefined ||
    (typeof p === 'object' && !Array.isArray(p) && typeof (p as Record<string, unknown>).profile_name === 'string');
  return fine ? runKey(row as unknown as ConnectorRun) : undefined;
}

/**
 * Across the pages of one scan it keeps, per (bridge_name, profile name), the row with the
 * greatest `_time` (ties: the later row). Rows it cannot order with certainty (no `_time`, an odd
 * bridge_name or profile) are all kept, so the exact ordering (`runTime`) and the schema still
 * decide about them on the main thread. Each call makes its own state: nothing is shared between
 * two sets of reducers.
 */
export function createScanReducers(): ScanReducers {
  const scans = new Map<number, ScanState>();
  const stateOf = (scan: number): ScanState => {
    let state = scans.get(scan);
    if (!state) {
      state = { newest: new Map(), loose: [], order: 0, known: new Map() };
      scans.set(scan, state);
    }
    return state;
  };
  const keptRows = (scan: number): unknown[] => {
    const state = scans.get(scan);
    if (!state) return [];
    const kept = state.loose.slice();
    for (const v of state.newest.values()) kept.push(v);
    // Read order, so that ties still go to the later row when the main thread reduces again.
    kept.sort((a, b) => a.order - b.order);
    return kept.map((k) => capDepth(k.row));
  };
  return {
    begin(scan, known) {
      stateOf(scan).known = new Map(known);
    },
    page(scan, text) {
      let body: unknown;
      try {
        body = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
      } catch {
        return { kind: 'not_json' };
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return { kind: 'other', body: capDepth(body) };
      const page = body as Record<string, unknown>;
      const content = page.content;
      if (!Array.isArray(content)) return { kind: 'other', body: capDepth(body) };
      const state = stateOf(scan);
      let sorted = true;
      let first: number | undefined;
      let last: number | undefined;
      let min: number | undefined;
      let fresh = 0;
      let firstFresh: number | undefined;
      for (const item of content) {
        const order = state.order++;
        const row = item !== null && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : undefined;
        const time = row ? parseTimestamp(row._time) : undefined;
        if (time === undefined || row === undefined) {
          sorted = false;
          fresh++;
          state.loose.push({ row: item, time: -Infinity, order });
          continue;
        }
        if (last !== undefined && time > last) sorted = false;
        if (first === undefined) first = time;
        last = time;
        if (min === undefined || time < min) min = time;
        const key = keyOf(row);
        if (key === undefined) {
          fresh++;
          firstFresh ??= time;
          state.loose.push({ row, time, order });
          continue;
        }
        const best = state.newest.get(key);
        const known = state.known.get(key);
        if ((best === undefined || time > best.time) && (known === undefined || time > known)) {
          fresh++;
          firstFresh ??= time;
        }
        if (!best || time >= best.time) state.newest.set(key, { row, time, order });
      }
      const envelope: Record<string, unknown> = {};
      for (const k of Object.keys(page)) if (k !== 'content') envelope[k] = capDepth(page[k]);
      return { kind: 'page', count: content.length, envelope, sorted, first, last, min, fresh, firstFresh };
    },
    finish(scan) {
      const rows = keptRows(scan);
      scans.delete(scan);
      return rows;
    },
    peek: keptRows,
    drop(scan) {
      scans.delete(scan);
    },
  };
}
