/** Paging decisions for the paged lists (connector run history, Actions): pure, no I/O. */

import type { PageFields } from '../api/endpoints.js';

export type PageDecision = 'next' | 'done' | 'truncated';

/**
 * After reading page `page` (0-based) holding `items` rows: read the next page, stop because this
 * was the last one, or stop because the next page would pass `maxPages` (the caller warns).
 * A page with neither `last` nor `totalPages` is the whole list: a server that does not page
 * ignores `page` and would send the same rows again.
 */
export function nextPageDecision(page: number, items: number, fields: PageFields, maxPages: number): PageDecision {
  if (items === 0) return 'done';
  if (fields.last === true) return 'done';
  const total = fields.totalPages;
  if (total != null && page + 1 >= total) return 'done';
  if (fields.last == null && total == null) return 'done';
  return page + 1 >= maxPages ? 'truncated' : 'next';
}

/** Query string of one page request: `page=0&size=50[&sort=display_name%2Casc]`. */
export function pageQuery(page: number, size: number, sort?: string): string {
  const parts = [`page=${page}`, `size=${size}`];
  if (sort) parts.push(`sort=${encodeURIComponent(sort)}`);
  return parts.join('&');
}

/** Reads pages 0, 1, … until `nextPageDecision` says stop; `onTruncated` hears of a page-cap stop. */
export async function readAllPages<P extends PageFields, Row>(
  fetchPage: (page: number) => Promise<P>,
  rowsOf: (page: P) => readonly Row[],
  maxPages: number,
  onTruncated: (rowsRead: number) => void,
): Promise<Row[]> {
  const all: Row[] = [];
  for (let page = 0; ; page++) {
    const body = await fetchPage(page);
    const rows = rowsOf(body);
    // One push per row: a spread of a very large page could overflow the argument limit.
    for (const row of rows) all.push(row);
    const decision = nextPageDecision(page, rows.length, body, maxPages);
    if (decision === 'truncated') onTruncated(all.length);
    if (decision !== 'next') return all;
  }
}
