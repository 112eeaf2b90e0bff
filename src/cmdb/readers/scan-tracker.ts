/**
 * Where the connector history's scan stands (the status page, the scan metrics, and a restart's
 * position): pages and rows read, bytes, the expected total, start and end. The reader
 * (connector-history.ts) tells it each page; it tells the IO each move.
 */
import type { HistoryIo, HistoryPage, ScanKind, ScanProgress } from './connector-history-types.js';
import type { ScanPosition } from './connector-history-state.js';

export class ScanTracker {
  /** The scan in progress, or the last one (ended). */
  current: ScanProgress | undefined;
  /** Pages of full scans read: grows with every one (the state writer's mark). */
  fullPages = 0;

  /** A scan begins; `from` when it goes on from what an earlier process read. */
  begin(io: HistoryIo, kind: ScanKind, pageSize: number, from?: ScanPosition): ScanProgress {
    const at = io.now();
    const before = from
      ? { startedAt: from.startedAt, pagesRead: from.pagesRead, rowsRead: from.rowsRead, bytes: from.bytes, ...(from.pagesTotal === undefined ? {} : { pagesTotal: from.pagesTotal }) }
      : { startedAt: at, pagesRead: 0, rowsRead: 0, bytes: 0 };
    this.current = { kind, ...before, lastPageAt: at, pageSize };
    io.progress(this.current);
    return this.current;
  }

  /** Page `page` (0-based, at `pageSize`) arrived. */
  advance(io: HistoryIo, p: HistoryPage, pageSize: number, page: number): void {
    const c = this.current;
    if (!c) return;
    if (c.kind === 'full') this.fullPages++;
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

  /** Where the scan in progress stands, as a restart goes on from it: `next` is its next page. */
  position(sort: string, next: { readonly page: number; readonly size: number }): ScanPosition | undefined {
    const c = this.current;
    if (!c || c.kind !== 'full') return undefined;
    const { pagesRead, rowsRead, bytes, pagesTotal, startedAt } = c;
    return { sort, ...next, startedAt, pagesRead, rowsRead, bytes, ...(pagesTotal === undefined ? {} : { pagesTotal }) };
  }

  end(io: HistoryIo): void {
    if (!this.current) return;
    this.current = { ...this.current, endedAt: io.now() };
    io.progress(this.current);
  }
}
