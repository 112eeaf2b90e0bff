import { describe, expect, it } from 'vitest';
import { formatDuration, intervalProblem, nearestIntervals, parseDuration, VALID_INTERVALS } from '../../src/config/durations.js';

describe('parseDuration', () => {
  it.each([
    ['30s', 30],
    ['5m', 300],
    ['1h', 3600],
    ['1d', 86400],
    ['1h30m', 5400],
    ['500ms', 0.5],
    ['1.5s', 1.5],
    [' 15m ', 900],
    ['90', 90],
    [45, 45],
    [0.25, 0.25],
  ])('reads %j as %d seconds', (input, seconds) => {
    expect(parseDuration(input)).toBe(seconds);
  });

  const INVALID: unknown[] = ['', 'abc', '5 m', '5x', 's', '-5s', '1h-30m', -1, Number.NaN, Number.POSITIVE_INFINITY, null, true, {}, ['5m']];
  it.each(INVALID.map((input) => [input]))(
    'rejects %j',
    (input) => {
      expect(parseDuration(input)).toBeUndefined();
    },
  );
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [30, '30s'],
    [300, '5m'],
    [5400, '1h30m'],
    [86400, '1d'],
    [0.5, '500ms'],
  ])('writes %d seconds as %s, which parseDuration reads back', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
    expect(parseDuration(text)).toBe(seconds);
  });
});

describe('intervalProblem', () => {
  it.each(VALID_INTERVALS.map((s) => [formatDuration(s), s]))('accepts %s', (_name, seconds) => {
    expect(intervalProblem(seconds)).toBeUndefined();
  });

  it('accepts exactly the whole intervals from 10s to 1d that divide a day, 90s and 45m among them', () => {
    const dividing: number[] = [];
    for (let s = 1; s <= 2 * 86400; s++) if (intervalProblem(s) === undefined) dividing.push(s);
    expect(dividing).toEqual(VALID_INTERVALS);
    for (const s of dividing) expect(86400 % s, formatDuration(s)).toBe(0);
    expect(dividing).toEqual(expect.arrayContaining([10, 45, 90, 300, 2700, 5400, 86400]));
    expect(dividing[0]).toBe(10);
    expect(dividing.at(-1)).toBe(86400);
  });

  it.each([
    [5, 'must be at least 10s, got 5s'],
    [0, 'must be at least 10s'],
    [420, 'must divide a day evenly (each poll falls at the same times every day), got 7m; the nearest valid intervals are 6m40s or 7m12s'],
    [2640, 'got 44m; the nearest valid intervals are 40m or 45m'],
    [18000, 'got 5h; the nearest valid intervals are 4h48m or 6h'],
    [172800, 'must be at most 1d, got 2d'],
    [10.5, 'got 10.5s; the nearest valid intervals are 10s or 12s'],
    [11, 'the nearest valid intervals are 10s or 12s'],
  ])('rejects %d seconds: %s', (seconds, fragment) => {
    expect(intervalProblem(seconds)).toContain(fragment);
  });

  it('names valid neighbours: each suggestion is itself accepted', () => {
    for (const s of [11, 77, 420, 1000, 4000, 18000, 50000, 86399]) {
      const message = intervalProblem(s) ?? '';
      const named = /the nearest valid intervals are (\S+) or (\S+)$/.exec(message);
      expect(named, message).not.toBeNull();
      const [below, above] = [parseDuration(named?.[1]), parseDuration(named?.[2])];
      expect(intervalProblem(below ?? -1)).toBeUndefined();
      expect(intervalProblem(above ?? -1)).toBeUndefined();
      expect(below).toBeLessThan(s);
      expect(above).toBeGreaterThan(s);
      expect(nearestIntervals(s)).toEqual([below, above]);
    }
  });
});
