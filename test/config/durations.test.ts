import cron from 'node-cron';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { cronFor, formatDuration, intervalProblem, parseDuration, VALID_INTERVALS } from '../../src/config/durations.js';

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

  it.each([
    [5, 'at least 10s'],
    [0, 'at least 10s'],
    [45, 'must divide a minute, an hour or a day evenly'],
    [90, 'must divide a minute, an hour or a day evenly'],
    [420, 'got 7m'],
    [18000, 'got 5h'],
    [172800, 'got 2d'],
    [10.5, 'must divide'],
  ])('rejects %d seconds (%s)', (seconds, fragment) => {
    expect(intervalProblem(seconds)).toContain(fragment);
  });

  it('lists valid examples in its message', () => {
    expect(intervalProblem(420)).toMatch(/valid examples: 10s, 15s, 30s, 1m, .*1h.*1d/);
  });
});

/** Seconds of the day at which the expression fires, computed from node-cron's own parse of it. */
function firingSecondsOfDay(expression: string): number[] {
  const f = cron.parse(expression);
  // The day fields must not restrict anything: the pattern repeats every day.
  expect(f.dayOfMonth).toHaveLength(31);
  expect(f.month).toHaveLength(12);
  expect(new Set(f.dayOfWeek.map((d) => Number(d) % 7)).size).toBe(7);
  const out: number[] = [];
  for (const h of f.hour) for (const m of f.minute) for (const s of f.second) out.push(h * 3600 + m * 60 + s);
  return out.sort((a, b) => a - b);
}

function expectedSecondsOfDay(interval: number, offset: number): number[] {
  const out: number[] = [];
  for (let t = offset; t < 86400; t += interval) out.push(t);
  return out;
}

const OFFSET_CASES = VALID_INTERVALS.flatMap((interval) =>
  [0, 1, Math.floor(interval / 2), Math.floor(interval * 0.37), interval - 1].map((offset) => [interval, offset] as const),
);

describe('cronFor', () => {
  it.each(OFFSET_CASES)('every %ds at offset %ds: node-cron accepts it and it fires exactly then', (interval, offset) => {
    const expression = cronFor(interval, offset);
    expect(cron.validate(expression)).toBe(true);
    expect(expression.split(' ')).toHaveLength(6);
    expect(firingSecondsOfDay(expression)).toEqual(expectedSecondsOfDay(interval, offset));
  });

  describe('with node-cron scheduling it (UTC)', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    // Start shortly before midnight so that every sequence crosses a day boundary.
    const NOW = Date.UTC(2024, 1, 28, 23, 40, 7, 500);

    it.each([
      ['10s', 10, 0],
      ['10s', 10, 3],
      ['30s', 30, 29],
      ['1m', 60, 0],
      ['1m', 60, 42],
      ['5m', 300, 123],
      ['15m', 900, 0],
      ['15m', 900, 899],
      ['1h', 3600, 1800],
      ['6h', 21600, 3723],
      ['1d', 86400, 0],
      ['1d', 86400, 86399],
    ])('every %s at offset %ds: successive runs are exactly one interval apart, on the offset', (_name, interval, offset) => {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(NOW);
      const task = cron.createTask(cronFor(interval, offset), () => undefined, { timezone: 'UTC' });
      try {
        const count = Math.min(400, Math.max(4, Math.ceil((2 * 86400) / interval)));
        const runs = task.getNextRuns(count).map((d) => d.getTime() / 1000);
        const nowSeconds = NOW / 1000;
        const first = Math.floor((nowSeconds - offset) / interval) * interval + offset + interval;
        expect(runs[0]).toBe(first);
        runs.forEach((t, i) => expect(t).toBe(first + i * interval));
        expect(task.match(new Date(first * 1000))).toBe(true);
        expect(task.match(new Date((first + 1) * 1000))).toBe(false);
        expect(task.match(new Date((first - 1) * 1000))).toBe(false);
      } finally {
        void task.destroy();
      }
    });
  });

  it.each([
    [86400 + 5, 10, 5],
    [-10, 10, 0],
    [12.9, 10, 2],
  ])('takes offset %d modulo the interval %d (→ %d)', (offset, interval, effective) => {
    expect(cronFor(interval, offset)).toBe(cronFor(interval, effective));
  });

  it.each([[7], [45], [420], [5 * 3600]])('throws ConfigError for the non-cron interval %d', (interval) => {
    expect(() => cronFor(interval, 0)).toThrow(ConfigError);
  });
});
