/**
 * Durations in the configuration, and which of them can be poll intervals.
 *
 * The scheduler fires each job at the same seconds of every UTC day (node-cron expressions, see
 * src/scheduler/cron.ts), so a poll interval must divide a day evenly: 90s and 45m do, 7m and 5h
 * would leave a short or long gap at midnight.
 */

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
const PLAIN_NUMBER = /^\d+(?:\.\d+)?$/;

/** '30s', '500ms', '1h30m', '300' or a number of seconds → seconds; undefined when negative or malformed. */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (PLAIN_NUMBER.test(text)) return Number(text);
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const m = PART.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * (UNIT_SECONDS[m[2] ?? ''] ?? Number.NaN);
  }
  return Number.isFinite(total) ? total : undefined;
}

/** 300 → '5m', 5400 → '1h30m', 0.5 → '500ms': the shortest form parseDuration reads back. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return String(seconds);
  if (seconds === 0) return '0s';
  if (!Number.isInteger(seconds)) return seconds < 1 ? `${Math.round(seconds * 1000)}ms` : `${seconds}s`;
  let rest = seconds;
  let out = '';
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_SECONDS[unit] ?? 1;
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}

export const MIN_INTERVAL_SECONDS = 10;
export const DAY_SECONDS = 86400;

/** Every interval the scheduler can run on, in seconds, ascending: the whole divisors of a day from 10s. */
export const VALID_INTERVALS: readonly number[] = Array.from({ length: DAY_SECONDS }, (_, i) => i + 1).filter(
  (n) => n >= MIN_INTERVAL_SECONDS && DAY_SECONDS % n === 0,
);

/** The valid intervals nearest `seconds`: the one below and the one above it (one at the ends). */
export function nearestIntervals(seconds: number): number[] {
  const above = VALID_INTERVALS.findIndex((n) => n > seconds);
  if (above < 0) return [DAY_SECONDS];
  return above === 0 ? [VALID_INTERVALS[0] as number] : [VALID_INTERVALS[above - 1] as number, VALID_INTERVALS[above] as number];
}

/** Why `seconds` cannot be a poll interval, or undefined when it can. */
export function intervalProblem(seconds: number): string | undefined {
  if (VALID_INTERVALS.includes(seconds)) return undefined;
  const got = formatDuration(seconds);
  if (seconds < MIN_INTERVAL_SECONDS) return `must be at least ${MIN_INTERVAL_SECONDS}s, got ${got}`;
  if (seconds > DAY_SECONDS) return `must be at most 1d, got ${got}`;
  const nearest = nearestIntervals(seconds).map(formatDuration).join(' or ');
  return `must divide a day evenly (each poll falls at the same times every day), got ${got}; the nearest valid intervals are ${nearest}`;
}
