/**
 * The cron expressions of a poll interval fire exactly at offset + k × interval of every UTC day,
 * each instant once, also for intervals that divide a day but are no cron step (90s, 45m): checked
 * against node-cron's own reading of the expressions and against the runs node-cron plans.
 */
import cron from 'node-cron';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatDuration, VALID_INTERVALS } from '../../src/config/durations.js';
import { cronExpressions } from '../../src/scheduler/cron.js';

/** Seconds of the day at which the expression fires, from node-cron's own parse of it. */
function firingSecondsOfDay(expression: string): number[] {
  const f = cron.parse(expression);
  // The day fields must not restrict anything: the pattern repeats every day.
  expect(f.dayOfMonth).toHaveLength(31);
  expect(f.month).toHaveLength(12);
  expect(new Set(f.dayOfWeek.map((d) => Number(d) % 7)).size).toBe(7);
  const out: number[] = [];
  for (const h of f.hour) for (const m of f.minute) for (const s of f.second) out.push(h * 3600 + m * 60 + s);
  return out;
}

function expectedSecondsOfDay(interval: number, offset: number): number[] {
  const out: number[] = [];
  for (let t = offset; t < 86400; t += interval) out.push(t);
  return out;
}

const OFFSET_CASES = VALID_INTERVALS.flatMap((interval) =>
  [0, 1, Math.floor(interval / 2), Math.floor(interval * 0.37), interval - 1].map((offset) => [formatDuration(interval), interval, offset] as const),
);

describe('cronExpressions', () => {
  it.each(OFFSET_CASES)('every %s (%ds) at offset %ds: node-cron accepts each expression and together they fire exactly then, each instant once', (_name, interval, offset) => {
    const expressions = cronExpressions(interval, offset);
    for (const e of expressions) {
      expect(cron.validate(e), e).toBe(true);
      expect(e.split(' '), e).toHaveLength(6);
    }
    const fired = expressions.flatMap(firingSecondsOfDay).sort((a, b) => a - b);
    expect(fired).toEqual(expectedSecondsOfDay(interval, offset));
  });

  it.each([
    // 00:00:00, 00:01:30, 00:03:00, 00:04:30, …: second 0 of every third minute, second 30 of the minutes between.
    [90, 0, ['0 0,3,6,9,12,15,18,21,24,27,30,33,36,39,42,45,48,51,54,57 * * * *', '30 1,4,7,10,13,16,19,22,25,28,31,34,37,40,43,46,49,52,55,58 * * * *']],
    [2700, 0, ['0 0,45 0,3,6,9,12,15,18,21 * * *', '0 30 1,4,7,10,13,16,19,22 * * *', '0 15 2,5,8,11,14,17,20,23 * * *']],
    [30, 7, ['7,37 * * * * *']],
    [60, 42, ['42 * * * * *']],
    [21600, 3723, ['3 2 1,7,13,19 * * *']],
  ])('every %ds at offset %ds: %j', (interval, offset, expected) => {
    expect(cronExpressions(interval, offset)).toEqual(expected);
  });

  it('an interval a minute, an hour or a day divides by whole steps is one expression', () => {
    for (const interval of VALID_INTERVALS) {
      const simple = 60 % interval === 0 || (interval % 60 === 0 && 3600 % interval === 0) || (interval % 3600 === 0 && 86400 % interval === 0);
      if (simple) expect(cronExpressions(interval, 17 % interval), formatDuration(interval)).toHaveLength(1);
    }
  });

  it.each([
    [86400 + 5, 10, 5],
    [-10, 10, 0],
    [12.9, 10, 2],
    [-1, 2700, 2699],
  ])('takes offset %d modulo the interval %d (→ %d)', (offset, interval, effective) => {
    expect(cronExpressions(interval, offset)).toEqual(cronExpressions(interval, effective));
  });

  it.each([[7], [420], [5 * 3600], [2 * 86400], [10.5]])('refuses the interval %d, which does not divide a day (validated at load)', (interval) => {
    expect(() => cronExpressions(interval, 0)).toThrow(RangeError);
  });

  describe('the runs node-cron plans (UTC), over a whole day and across midnight', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    // Shortly before midnight so that every sequence crosses a day boundary.
    const NOW = Date.UTC(2024, 1, 28, 23, 40, 7, 500);

    it.each([
      ['30s', 30, 29],
      ['45s', 45, 44],
      ['90s', 90, 0],
      ['90s', 90, 61],
      ['16m', 960, 500],
      ['45m', 2700, 0],
      ['45m', 2700, 1234],
      ['1h', 3600, 1800],
      ['2h24m', 8640, 7000],
      ['6h', 21600, 3723],
      ['1d', 86400, 86399],
    ])('every %s (%ds) at offset %ds: successive runs are exactly one interval apart, on the offset, for a day', (_name, interval, offset) => {
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(NOW);
      const tasks = cronExpressions(interval, offset).map((e) => cron.createTask(e, () => undefined, { timezone: 'UTC' }));
      try {
        // A day and a bit of each task's planned runs, merged: the job's runs from now on.
        const horizon = NOW / 1000 + 86400 + interval;
        const runs = tasks
          .flatMap((t) => t.getNextRuns(Math.ceil((86400 + interval) / interval) + 1).map((d) => d.getTime() / 1000))
          .filter((t) => t <= horizon)
          .sort((a, b) => a - b);
        const first = Math.floor((NOW / 1000 - offset) / interval) * interval + offset + interval;
        const expected: number[] = [];
        for (let t = first; t <= horizon; t += interval) expected.push(t);
        expect(expected.length).toBeGreaterThan(86400 / interval);
        expect(runs).toEqual(expected);
        for (const t of [first, first + interval]) expect(tasks.filter((task) => task.match(new Date(t * 1000)))).toHaveLength(1);
        expect(tasks.some((task) => task.match(new Date((first + 1) * 1000)))).toBe(false);
      } finally {
        for (const t of tasks) void t.destroy();
      }
    });
  });
});
