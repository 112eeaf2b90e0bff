/**
 * The one paging loop of the exporter: every paged read (the Action list, the connector history's
 * full and incremental scans, a backfill's scan of every run) asks its pages here, and says only
 * what differs: which page and size comes next, when to stop early, and whether a failed page is
 * asked again (at a smaller size). Pure of I/O: the walk's `fetch` does the asking.
 */
import type { PageFields } from '../../api/endpoints.js';

/** What one page says to the loop (its rows stay with the walk). */
export interface PageRead {
  /** Rows on the page. */
  readonly count: number;
  readonly fields: PageFields;
}

/** How far a walk got: rows and pages read so far. */
export interface WalkPosition {
  readonly rows: number;
  readonly pages: number;
}

export interface PageWalk<P extends PageRead> {
  /** The page to ask next and its size, from how far the walk got. */
  next(at: WalkPosition): { readonly page: number; readonly size: number };
  fetch(page: number, size: number): Promise<P>;
  /** A page failed: true to ask for it again (`next` says at what size), false to fail the walk. Default false. */
  askAgain?(err: unknown, at: WalkPosition, size: number): boolean;
  /** After each page (the service's last too): false ends the walk here. Default true. */
  goOn?(page: P, asked: { readonly page: number; readonly size: number }): boolean;
  /** The walk stops, truncated, once it read this many pages or rows while the service has more (default no limit). */
  readonly maxPages?: number;
  readonly maxRows?: number;
  /** How far an earlier part of the walk got (a scan continued after a restart); default none. */
  readonly start?: WalkPosition;
}

export interface Walked extends WalkPosition {
  /** Stopped at maxPages or maxRows while the service had more. */
  readonly truncated: boolean;
}

export async function walkPages<P extends PageRead>(walk: PageWalk<P>): Promise<Walked> {
  let at: WalkPosition = walk.start ?? { rows: 0, pages: 0 };
  for (;;) {
    const asked = walk.next(at);
    let p: P;
    try {
      p = await walk.fetch(asked.page, asked.size);
    } catch (err) {
      if (walk.askAgain?.(err, at, asked.size)) continue;
      throw err;
    }
    at = { rows: at.rows + p.count, pages: at.pages + 1 };
    // The walk's own stop first: it may need to see the last page too (an incremental scan checks its sort).
    if (walk.goOn?.(p, asked) === false || isLastPage(asked.page, p.count, p.fields)) return { ...at, truncated: false };
    if (at.pages >= (walk.maxPages ?? Infinity) || at.rows >= (walk.maxRows ?? Infinity)) return { ...at, truncated: true };
  }
}

/**
 * Whether page `page` (0-based) holding `items` rows is the last: empty, marked last, the last of
 * totalPages, or a page with neither `last` nor `totalPages` (the whole list: a server that does
 * not page ignores `page` and would send the same rows again).
 */
export function isLastPage(page: number, items: number, fields: PageFields): boolean {
  if (items === 0 || fields.last === true) return true;
  const total = fields.totalPages;
  if (total != null && page + 1 >= total) return true;
  return fields.last == null && total == null;
}

/** Query string of one page request: `page=0&size=50[&sort=display_name%2Casc]`. */
export function pageQuery(page: number, size: number, sort?: string): string {
  const parts = [`page=${page}`, `size=${size}`];
  if (sort) parts.push(`sort=${encodeURIComponent(sort)}`);
  return parts.join('&');
}

/** The largest page size at most `limit` that divides `consumed` (so the next page starts right after it), not below `floor`. */
export function sizeDividing(limit: number, consumed: number, floor: number): number | undefined {
  for (let size = Math.floor(limit); size >= floor; size--) if (consumed % size === 0) return size;
  return undefined;
}
