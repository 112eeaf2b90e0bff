/**
 * Datetime values of saved queries (docs/queries.md): only the full `yyyy-mm-dd HH:MM:SS` is sent, in
 * the stack's `timezone`; a relative value (`today`, `-30d`, `+90d`) is resolved at each run to
 * 00:00:00 of its day, so that a count stays the same for every run of one day.
 */
import { dayInZone, parseTimestamp } from '../time.js';

const RELATIVE = /^(?:(today)|([+-])(\d{1,5})d)$/i;
const ABSOLUTE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** Days from today the relative value names, or undefined when it is not one. */
export function relativeDays(value: string): number | undefined {
  const m = RELATIVE.exec(value.trim());
  if (!m) return undefined;
  if (m[1] !== undefined) return 0;
  const days = Number(m[3]);
  return m[2] === '-' && days > 0 ? -days : days;
}

/** The day `days` from today in words, for messages: "today", "the day 3 days before today". */
export function relativeDay(days: number): string {
  if (days === 0) return 'today';
  const n = Math.abs(days);
  return `the day ${n} day${n === 1 ? '' : 's'} ${days < 0 ? 'before' : 'after'} today`;
}

/** Why `value` cannot be a Datetime value of a query, or undefined when it can. */
export function datetimeProblem(value: string): string | undefined {
  const text = value.trim();
  if (relativeDays(text) !== undefined) return undefined;
  if (ABSOLUTE.test(text)) return parseTimestamp(text) === undefined ? `${JSON.stringify(value)} is not a real time` : undefined;
  if (DATE_ONLY.test(text)) {
    return `${JSON.stringify(value)} has no time: the service places a bare date at an unspecified point of the day; write "${text} 00:00:00"`;
  }
  return `${JSON.stringify(value)} is not a time: write "yyyy-mm-dd HH:MM:SS", or a day relative to today: "today", "-30d", "+90d"`;
}

/** `yyyy-mm-dd HH:MM:SS` text `seconds` later: calendar arithmetic on the text itself, in no time zone. */
function later(text: string, seconds: number): string {
  const [y = 0, mo = 1, d = 1, h = 0, mi = 0, s = 0] = text.split(/[- :]/).map(Number);
  const at = new Date(0);
  at.setUTCFullYear(y, mo - 1, d);
  at.setUTCHours(h, mi, s + seconds);
  return at.toISOString().replace('T', ' ').slice(0, 19);
}

/**
 * An absolute value's day and second as ranges: the day's first second, the next day's, and the
 * second after the value. Undefined for anything but a real `yyyy-mm-dd HH:MM:SS`.
 */
export function absoluteRanges(value: string): { readonly day: string; readonly nextDay: string; readonly nextSecond: string } | undefined {
  const text = value.trim();
  if (!ABSOLUTE.test(text) || parseTimestamp(text) === undefined) return undefined;
  const day = `${text.slice(0, 10)} 00:00:00`;
  return { day, nextDay: later(day, 86400), nextSecond: later(text, 1) };
}

/** The value as sent at `nowSeconds`: a relative day resolved to `yyyy-mm-dd 00:00:00` in `timeZone`, anything else as it is. */
export function resolveDatetime(value: string, nowSeconds: number, timeZone: string): string {
  const days = relativeDays(value);
  if (days === undefined) return value.trim();
  const day = dayInZone(nowSeconds, timeZone, days);
  // The zone was validated at load; UTC is the honest fallback for a zone Intl no longer knows.
  return `${day ?? (dayInZone(nowSeconds, 'UTC', days) as string)} 00:00:00`;
}
