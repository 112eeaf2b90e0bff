/**
 * Durations in the configuration, and the cron expressions the scheduler runs them on.
 *
 * The scheduler uses node-cron, whose expressions can only say "at these seconds / minutes / hours".
 * An interval is therefore only usable when it divides a minute, an hour or a day evenly; anything
 * else (90s, 7m, 5h) would drift at the minute, hour or day boundary.
 */
import { ConfigError } from '../errors.js';

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;
const PLAIN_NUMBER = /^\d+(?:\.\d+)?$/;

/**
 * '30s' | '5m' | '1h' | '1d' | number of seconds → seconds. Also accepts '500ms', sequences such as
 * '1h30m', and a number written as text ('300'). Negative, non-finite or malformed values give
 * undefined.
 */
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

/** Every interval the scheduler can run on, in seconds, ascending. */
export const VALID_INTERVALS: readonly number[] = [
  ...[10, 12, 15, 20, 30],
  ...[1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30].map((m) => m * 60),
  ...[1, 2, 3, 4, 6, 8, 12, 24].map((h) => h * 3600),
];

const EXAMPLES = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400].map(formatDuration);

/** Why `seconds` cannot be a poll interval, or undefined when it can. */
export function intervalProblem(seconds: number): string | undefined {
  if (VALID_INTERVALS.includes(seconds)) return undefined;
  const got = formatDuration(seconds);
  if (seconds < MIN_INTERVAL_SECONDS) return `must be at least ${MIN_INTERVAL_SECONDS}s, got ${got}`;
  return (
    `must divide a minute, an hour or a day evenly (the scheduler uses cron), got ${got}; ` +
    `valid examples: ${EXAMPLES.join(', ')}`
  );
}

function sequence(start: number, step: number, limit: number): string {
  if (step === 1) return '*';
  const values: number[] = [];
  for (let v = start; v < limit; v += step) values.push(v);
  return values.join(',');
}

/**
 * A 6-field node-cron expression (seconds first) that fires every `intervalSeconds`, shifted by
 * `offsetSeconds` (0 ≤ offset < interval) so that jobs of several groups and stacks start spread out.
 * Intervals must divide a minute, an hour or a day evenly (validated at load). The offset is
 * rounded down to whole seconds and taken modulo the interval.
 *
 * The instants are wall-clock instants in the timezone node-cron is given; pass `timezone: 'UTC'`
 * so that intervals of hours stay regular across daylight-saving changes.
 */
export function cronFor(intervalSeconds: number, offsetSeconds: number): string {
  const problem = intervalProblem(intervalSeconds);
  if (problem !== undefined) throw new ConfigError([{ path: 'interval', message: problem }]);
  if (!Number.isFinite(offsetSeconds)) {
    throw new ConfigError([{ path: 'offset', message: `must be a finite number, got ${offsetSeconds}` }]);
  }
  const interval = intervalSeconds;
  const offset = ((Math.floor(offsetSeconds) % interval) + interval) % interval;
  const second = offset % 60;
  const minute = Math.floor(offset / 60) % 60;
  const hour = Math.floor(offset / 3600);
  if (interval < 60) return `${sequence(second, interval, 60)} * * * * *`;
  if (interval < 3600) return `${second} ${sequence(minute, interval / 60, 60)} * * * *`;
  return `${second} ${minute} ${sequence(hour, interval / 3600, 24)} * * *`;
}
