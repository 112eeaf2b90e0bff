import { describe, expect, it } from 'vitest';
import { findGaps, formatGap, medianSpacing } from '../../src/backfill/gaps.js';
import { formatDuration } from '../../src/config/durations.js';

const T0 = Date.parse('2026-11-20T00:00:00Z') / 1000;
const every = (from: number, to: number, step: number) => Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);

describe('gaps in the covered points', () => {
  it('finds a 2-hour hole, from just after the last point before it to just before the next', () => {
    const hole = [T0 + 4 * 3600, T0 + 6 * 3600] as const;
    const covered = every(T0, T0 + 10 * 3600, 15).filter((t) => t < hole[0] || t > hole[1]);
    const gaps = findGaps(covered, T0, T0 + 10 * 3600, 15);
    // The last point before it (T0+4h-15) may hold a sample from up to 15 s before it.
    expect(gaps).toEqual([[hole[0] - 30 + 1, hole[1] + 15 - 1]]);
    expect(formatGap(gaps[0] as [number, number], formatDuration)).toBe('2026-11-20T03:59:31Z to 2026-11-20T06:00:14Z (2h44s)');
  });

  it('a missed scrape or two is not a gap; three are', () => {
    const all = every(T0, T0 + 3600, 15);
    const without = (...ts: number[]) => all.filter((t) => !ts.includes(t));
    expect(findGaps(without(T0 + 600), T0, T0 + 3600, 15)).toEqual([]);
    expect(findGaps(without(T0 + 600, T0 + 615), T0, T0 + 3600, 15)).toEqual([]);
    expect(findGaps(without(T0 + 600, T0 + 615, T0 + 630), T0, T0 + 3600, 15)).toEqual([[T0 + 571, T0 + 644]]);
  });

  it('the range before the first point and after the last are gaps; nothing covered is one gap', () => {
    const covered = every(T0 + 3600, T0 + 7200, 30);
    expect(findGaps(covered, T0, T0 + 3 * 3600, 30)).toEqual([
      [T0, T0 + 3599],
      [T0 + 7200 - 30 + 1, T0 + 3 * 3600],
    ]);
    expect(findGaps([], T0, T0 + 3600, 30)).toEqual([[T0, T0 + 3600]]);
  });

  it('a point covered by backfilled samples reaches back a backfill step', () => {
    const backfilled = every(T0, T0 + 3600, 15);
    const scraped = every(T0 + 7200, T0 + 3 * 3600, 15);
    const reach = (t: number) => (t <= T0 + 3600 ? 300 : 15);
    expect(findGaps([...backfilled, ...scraped], T0, T0 + 3 * 3600, 15, reach)).toEqual([[T0 + 3600 - 300 + 1, T0 + 7200 - 1]]);
  });

  it('the scrape interval from samples is their median spacing', () => {
    expect(medianSpacing([0, 15, 30, 46, 60, 300])).toBe(15);
    expect(medianSpacing([0, 15])).toBeUndefined();
  });
});
