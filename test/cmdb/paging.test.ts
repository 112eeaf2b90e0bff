import { describe, expect, it } from 'vitest';
import { nextPageDecision, pageQuery, readAllPages } from '../../src/cmdb/paging.js';

describe('nextPageDecision', () => {
  it.each([
    ['last:false continues', 0, 5, { last: false }, 100, 'next'],
    ['last:true stops', 3, 5, { last: true }, 100, 'done'],
    ['page+1 reaching totalPages stops', 2, 5, { totalPages: 3 }, 100, 'done'],
    ['page+1 below totalPages continues', 1, 5, { totalPages: 3 }, 100, 'next'],
    ['last:false but totalPages reached stops', 2, 5, { last: false, totalPages: 3 }, 100, 'done'],
    ['an empty page stops', 1, 0, { last: false, totalPages: 9 }, 100, 'done'],
    ['neither last nor totalPages is a single page', 0, 5, {}, 100, 'done'],
    ['null last and totalPages is a single page', 0, 5, { last: null, totalPages: null }, 100, 'done'],
    ['the page cap truncates', 1, 5, { last: false }, 2, 'truncated'],
    ['the page cap truncates with totalPages', 0, 5, { totalPages: 10 }, 1, 'truncated'],
    ['the page cap does not truncate the real last page', 1, 5, { totalPages: 2 }, 2, 'done'],
  ] as const)('%s', (_name, page, items, fields, maxPages, want) => {
    expect(nextPageDecision(page, items, fields, maxPages)).toBe(want);
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

describe('readAllPages', () => {
  const pages = [
    { rows: [1, 2], last: false },
    { rows: [3, 4], last: false },
    { rows: [5], last: true },
  ];
  it('concatenates every page in order and stops at the last', async () => {
    const asked: number[] = [];
    const rows = await readAllPages(
      async (p) => {
        asked.push(p);
        return pages[p] ?? { rows: [], last: true };
      },
      (p) => p.rows,
      10,
      () => {
        throw new Error('not truncated');
      },
    );
    expect(rows).toEqual([1, 2, 3, 4, 5]);
    expect(asked).toEqual([0, 1, 2]);
  });

  it('reports a stop at the page cap with the rows read so far', async () => {
    const truncated: number[] = [];
    const rows = await readAllPages(async (p) => pages[p] ?? { rows: [], last: true }, (p) => p.rows, 2, (n) => truncated.push(n));
    expect(rows).toEqual([1, 2, 3, 4]);
    expect(truncated).toEqual([4]);
  });
});
