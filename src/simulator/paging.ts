/** Spring-style paging (`page` 0-based, `size`), as the real service's list endpoints answer. */

/**
 * Larger requests are cut to this, as Spring's max-page-size does. High enough for pages of ~25 MB
 * (a real 2,000-row page is 24.8 MB; the simulator's rows are smaller).
 */
export const MAX_PAGE_SIZE = 20_000;

export interface PageRequest {
  page: number;
  size: number;
}

function nonNegativeInt(text: string | null): number | undefined {
  if (text === null) return undefined;
  return /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
}

/** The page asked for, or a message saying what is wrong with it. */
export function pageRequest(query: URLSearchParams, defaultSize: number): PageRequest | string {
  const page = nonNegativeInt(query.get('page')) ?? 0;
  const size = nonNegativeInt(query.get('size')) ?? defaultSize;
  if (Number.isNaN(page)) return 'page must be an integer >= 0';
  if (Number.isNaN(size) || size < 1) return 'size must be an integer >= 1';
  return { page, size: Math.min(size, MAX_PAGE_SIZE) };
}

export interface PageInfo {
  pageable: {
    pageNumber: number;
    pageSize: number;
    sort: { sorted: boolean; unsorted: boolean; empty: boolean };
    offset: number;
    paged: boolean;
    unpaged: boolean;
  };
  last: boolean;
  totalPages: number;
  totalElements: number;
  first: boolean;
  numberOfElements: number;
}

/** The slice of `all` on the requested page, and the envelope fields that describe it. */
export function slicePage<T>(all: readonly T[], req: PageRequest, sorted: boolean): { items: T[]; info: PageInfo } {
  const offset = req.page * req.size;
  const items = all.slice(offset, offset + req.size);
  const totalPages = Math.ceil(all.length / req.size);
  return {
    items,
    info: {
      pageable: {
        pageNumber: req.page,
        pageSize: req.size,
        sort: { sorted, unsorted: !sorted, empty: !sorted },
        offset,
        paged: true,
        unpaged: false,
      },
      last: req.page >= totalPages - 1,
      totalPages,
      totalElements: all.length,
      first: req.page === 0,
      numberOfElements: items.length,
    },
  };
}
