/** The one paging loop (src/cmdb/readers/pages.ts): when a page is the last, where a walk stops, how a failed page is asked again. */
import { describe, expect, it } from 'vitest';
import { isLastPage, pageQuery, sizeDividing, walkPages, type PageRead } from '../../src/cmdb/readers/pages.js';

describe('isLastPage', () => {
  it.each([
    ['last:false continues', 0, 5, { last: false }, false],
    ['last:true stops', 3, 5, { last: true }, true],
    ['page+1 reaching totalPages stops', 2, 5, { totalPages: 3 }, true],
    ['page+1 below totalPages continues', 1, 5, { totalPages: 3 }, false],
    ['last:false but totalPages reached stops', 2, 5, { last: false, totalPages: 3 }, true],
    ['an empty page stops', 1, 0, { last: false, totalPages: 9 }, true],
    ['neither last nor totalPages is a single page', 0, 5, {}, true],
    ['null last and totalPages is a single page', 0, 5, { last: null, totalPages: null }, true],
  ] as const)('%s', (_name, page, items, fields, want) => {
    expect(isLastPage(page, items, fields)).toBe(want);
  });
});

describe('pageQuery', () => {
  it.each([
    [0, 50, undefined, 'page=0&size=50'],
    [3, 10, 'display_name,asc', 'page=3&size=10&sort=display_name%2Casc'],
    [0, 5, 'a&b,desc', 'page=0&size=5&sort=a%26b%2Cdesc'],
  ])('page %i size %i sort %s → %s', (page, size, sort, want) => {
    expect(pageQuery(page, size, sort)).toBe(want);
  });
});

describe('sizeDividing', () => {
  it('finds the largest size at most the limit that divides the rows read, not below the floor', () => {
    expect(sizeDividing(1000, 2000, 50)).toBe(1000);
    expect(sizeDividing(500, 1200, 50)).toBe(400);
    expect(sizeDividing(60, 77, 50)).toBeUndefined();
  });
});

describe('walkPages', () => {
  const pages = [
    { rows: [1, 2], last: false },
    { rows: [3, 4], last: false },
    { rows: [5], last: true },
  ];
  /** A list of pages of two rows: page `p` of `pages`. */
  const walk = (maxPages: number, asked: number[], rows: number[]) => ({
    next: ({ pages: read }: { pages: number }) => ({ page: read, size: 2 }),
    fetch: async (p: number): Promise<PageRead> => {
      asked.push(p);
      const page = pages[p] ?? { rows: [], last: true };
      rows.push(...page.rows);
      return { count: page.rows.length, fields: { last: page.last } };
    },
    maxPages,
    maxRows: Number.POSITIVE_INFINITY,
  });

  it('reads every page in order and stops at the last', async () => {
    const asked: number[] = [];
    const rows: number[] = [];
    expect(await walkPages(walk(10, asked, rows))).toEqual({ rows: 5, pages: 3, truncated: false });
    expect(rows).toEqual([1, 2, 3, 4, 5]);
    expect(asked).toEqual([0, 1, 2]);
  });

  it('stops at the page cap, truncated, with the rows read so far', async () => {
    const rows: number[] = [];
    expect(await walkPages(walk(2, [], rows))).toEqual({ rows: 4, pages: 2, truncated: true });
    expect(rows).toEqual([1, 2, 3, 4]);
  });

  it('the page cap does not truncate the real last page', async () => {
    expect(await walkPages(walk(3, [], []))).toMatchObject({ pages: 3, truncated: false });
  });

  it('a page that fails is asked again when the walk says so, else the walk fails', async () => {
    let failures = 1;
    const asked: number[] = [];
    const again = {
      ...walk(10, asked, []),
      fetch: async (p: number): Promise<PageRead> => {
        asked.push(p);
        if (p === 1 && failures-- > 0) throw new Error('timed out');
        return { count: 2, fields: { last: p === 2 } };
      },
    };
    expect(await walkPages({ ...again, askAgain: () => true })).toMatchObject({ pages: 3 });
    expect(asked).toEqual([0, 1, 1, 2]);
    failures = 1;
    await expect(walkPages(again)).rejects.toThrow('timed out');
  });

  it('the walk\'s own stop is heard on every page, the last one too', async () => {
    const seen: number[] = [];
    await walkPages({ ...walk(10, [], []), goOn: (_p, asked) => (seen.push(asked.page), asked.page < 1) });
    expect(seen).toEqual([0, 1]);
  });
});
