import { describe, expect, it } from 'vitest';
import { exactEnd, exactStart, findGaps, formatGap, medianSpacing } from '../../src/backfill/gaps.js';
import { formatDuration } from '../../src/config/durations.js';

const T0 = Date.parse('2026-11-20T00:00:00Z') / 1000;
const every = (from: number, to: number, step: number) => Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);

describe('gaps in the covered points', () => {
  it('finds a 2-hour hole, from the first missed scrape to the last', () => {
    const hole = [T0 + 4 * 3600, T0 + 6 * 3600] as const;
    const covered = every(T0, T0 + 10 * 3600, 15).filter((t) => t < hole[0] || t > hole[1]);
    const gaps = findGaps(covered, T0, T0 + 10 * 3600, 15);
    // Just after the last covered point (a good scrape in the 15 s before it) to the last point not covered.
    expect(gaps).toEqual([[hole[0] - 15 + 1, hole[1]]]);
    expect(formatGap(gaps[0] as [number, number], formatDuration)).toBe('2026-11-20T03:59:46Z to 2026-11-20T06:00:00Z (2h15s)');
  });

  it('a missed scrape or two is not a gap; three are', () => {
    const all = every(T0, T0 + 3600, 15);
    const without = (...ts: number[]) => all.filter((t) => !ts.includes(t));
    expect(findGaps(without(T0 + 600), T0, T0 + 3600, 15)).toEqual([]);
    expect(findGaps(without(T0 + 600, T0 + 615), T0, T0 + 3600, 15)).toEqual([]);
    expect(findGaps(without(T0 + 600, T0 + 615, T0 + 630), T0, T0 + 3600, 15)).toEqual([[T0 + 586, T0 + 630]]);
  });

  it('a crash of 80 s at a 5-s scrape is a gap of that length, however long the steps of the backfill', () => {
    const kill = T0 + 600;
    const covered = every(T0, T0 + 1800, 5).filter((t) => t <= kill || t > kill + 80);
    expect(findGaps(covered, T0, T0 + 1800, 5)).toEqual([[kill + 1, kill + 80]]);
  });

  it('the range before the first point and after the last are gaps; nothing covered is one gap', () => {
    const covered = every(T0 + 3600, T0 + 7200, 30);
    expect(findGaps(covered, T0, T0 + 3 * 3600, 30)).toEqual([
      [T0, T0 + 3600 - 30],
      [T0 + 7200 + 1, T0 + 3 * 3600],
    ]);
    expect(findGaps([], T0, T0 + 3600, 30)).toEqual([[T0, T0 + 3600]]);
  });

  it('the range need not start on a point: a point before it counts only for where the gap starts', () => {
    const covered = every(T0, T0 + 3600, 60).filter((t) => t <= T0 + 60 || t > T0 + 600);
    expect(findGaps(covered, T0 + 30, T0 + 3600, 60)).toEqual([[T0 + 61, T0 + 600]]);
    expect(findGaps(every(T0 + 600, T0 + 3600, 60), T0 + 30, T0 + 3600, 60)).toEqual([[T0 + 30, T0 + 540]]);
  });

  it('the scrape interval from samples is their median spacing', () => {
    expect(medianSpacing([0, 15, 30, 46, 60, 300])).toBe(15);
    expect(medianSpacing([0, 15])).toBeUndefined();
  });

  describe('where a gap starts exactly, from the raw samples around it', () => {
    const hole = [T0 + 4 * 3600, T0 + 6 * 3600] as const;
    // Scrapes on the grid, none in the hole (Prometheus itself did not scrape): up and the stack's endpoints 1.
    const times = every(T0 + 3 * 3600, T0 + 7 * 3600, 15).filter((t) => t < hole[0] || t > hole[1]);
    const ones = times.map((t) => [t, '1'] as const);

    it('the same on Prometheus 3 (a window leaves its left edge open: the grid starts a scrape early) and 2 (closed: a second late)', () => {
      const samples = { up: ones, endpoints: [ones, times.map((t) => [t, '0'] as const)] };
      // Prometheus 3: the point at hole[0] sees no scrape in (hole[0]-15, hole[0]]; Prometheus 2 sees hole[0]-15 in [hole[0]-15, hole[0]].
      expect(exactStart([hole[0] - 14, hole[1]], samples, 15)).toBe(hole[0]);
      expect(exactStart([hole[0] + 1, hole[1]], samples, 15)).toBe(hole[0]);
    });

    it('after a kill: a millisecond after the first failed scrape, where Prometheus wrote its staleness markers', () => {
      const kill = T0 + 600.3;
      const scrapes = every(T0, T0 + 1200, 5).map((t) => t + 0.7);
      const up = scrapes.map((t) => [t, t < kill || t > kill + 80 ? '1' : '0'] as const);
      const endpoints = [scrapes.filter((t) => t < kill || t > kill + 80).map((t) => [t, '1'] as const)];
      // The grid (5 s) says: covered up to T0+600 (the scrape at T0+595.7), first missed point T0+605.
      expect(exactStart([T0 + 601, T0 + 680], { up, endpoints }, 5)).toBe(T0 + 600.701);
    });

    it('a scrape that answered without the stack (its CMDB down) is where the stack\'s series ended', () => {
      const up = every(T0, T0 + 300, 15).map((t) => [t, '1'] as const);
      const endpoints = [every(T0, T0 + 300, 15).map((t) => [t, t < T0 + 90 ? '1' : '0'] as const)];
      expect(exactStart([T0 + 76, T0 + 300], { up, endpoints }, 15)).toBe(T0 + 90.001);
    });

    it('no good scrape near it (the range starts inside the gap): as the grid says', () => {
      expect(exactStart([T0 + 30, T0 + 600], { up: [], endpoints: [] }, 15)).toBe(T0 + 30);
    });
  });

  describe('where a gap ends: its last point, or a millisecond after it where a missed scrape fell on it', () => {
    // The first missed scrape at T0+600.7: the gap starts at T0+600.701, the missed scrapes 5 s apart.
    it('a scrape before the last point: the last point (the sample after that scrape is inside the gap)', () => {
      expect(exactEnd([T0 + 600.701, T0 + 680], T0 + 600.701, 5)).toBe(T0 + 680);
    });

    it('a scrape on the last point itself: a millisecond after it, the sample after that scrape', () => {
      expect(exactEnd([T0 + 600.001, T0 + 680], T0 + 600.001, 5)).toBe(T0 + 680.001);
      expect(exactEnd([T0 + 600.001, T0 + 680], T0 + 600.001, 15)).toBe(T0 + 680);
    });
  });
});
