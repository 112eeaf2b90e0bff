/**
 * Time parsing in one place. The CMDB sends times in many shapes (epoch seconds,
 * ISO 8601 with ms/µs and offsets, `yyyy-mm-dd HH:mm:ss` without a zone, `yyyy-mm-dd`) and sometimes
 * a text where a time is expected ("After Next Data Ingestion"). Everything here returns unix seconds
 * or undefined: never NaN, never a throw, so a collector can drop one sample instead of failing.
 * The one Retry-After reader of the project is here too: the CMDB's road and remote write read the
 * server's word the same way.
 */

/**
 * Epoch numbers above this are read as milliseconds. 1e11 seconds is the year 5138, so no real
 * seconds value reaches it, while every millisecond value after 1973-03-03 does. The price: a
 * millisecond value before March 1973 is misread as seconds, which no CMDB time can be.
 */
export const EPOCH_MILLISECONDS_ABOVE = 1e11;

/** The largest time a JavaScript Date can hold, in seconds. */
const MAX_SECONDS = 8.64e12;
const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

const EPOCH_TEXT = /^\d+(?:\.\d+)?$/;
// yyyy-mm-dd, optionally followed by T or space, HH:mm[:ss[.fraction]], then Z / ±hh[:mm] / ±hhmm.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/** Unix seconds (may be fractional) or undefined when the value is not a time. Never NaN, never throws. */
export function parseTimestamp(value: unknown, timeZone = 'UTC'): number | undefined {
  if (typeof value === 'number') return fromEpoch(value);
  if (value instanceof Date) return positive(value.getTime() / 1000);
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (EPOCH_TEXT.test(text)) return fromEpoch(Number(text));
  return fromDateTime(text, timeZone);
}

/** `yyyy-mm-dd` at 00:00:00 UTC; also accepts a full timestamp (then as parseTimestamp). */
export function parseDay(value: unknown): number | undefined {
  // `20270331`, as a number or as text, is a day (yyyymmdd), not epoch seconds in 1970.
  const compact = COMPACT_DAY.exec(typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '');
  const seconds = compact ? dayOf(Number(compact[1]), Number(compact[2]), Number(compact[3])) : parseTimestamp(value, 'UTC');
  // A license day before 2000 is a misread value, not a license that expired decades ago.
  return seconds !== undefined && seconds >= YEAR_2000 ? seconds : undefined;
}

const COMPACT_DAY = /^(\d{4})(\d{2})(\d{2})$/;
const YEAR_2000 = Date.UTC(2000, 0, 1) / 1000;

function dayOf(year: number, month: number, day: number): number | undefined {
  const ms = Date.UTC(year, month - 1, day);
  const d = new Date(ms);
  // Date.UTC rolls 20270231 over into March: such a day does not exist.
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) return undefined;
  return ms / 1000;
}

function fromEpoch(n: number): number | undefined {
  if (!Number.isFinite(n)) return undefined;
  return positive(n > EPOCH_MILLISECONDS_ABOVE ? n / 1000 : n);
}

/** 0 and earlier are not CMDB times (they are placeholders or parse accidents). */
function positive(seconds: number): number | undefined {
  return Number.isFinite(seconds) && seconds > 0 && seconds <= MAX_SECONDS ? seconds : undefined;
}

function fromDateTime(text: string, timeZone: string): number | undefined {
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, fraction, zone] = m;
  const [hour, minute, second] = [Number(h ?? 0), Number(mi ?? 0), Number(s ?? 0)];
  // dayOf refuses a day that does not exist, and a year before 100 (Date.UTC remaps it to 19xx).
  const day = dayOf(Number(y), Number(mo), Number(d));
  if (day === undefined || hour > 23 || minute > 59 || second > 59) return undefined;
  // The wall time read as if it were UTC.
  const localMs = (day + hour * 3600 + minute * 60 + second) * 1000;
  const fractionSeconds = fraction ? Number(`0.${fraction}`) : 0;
  let utcMs: number | undefined;
  if (h === undefined) utcMs = localMs; // a bare date is midnight UTC, whatever the zone
  else if (zone !== undefined) {
    const offset = parseOffsetMinutes(zone);
    utcMs = offset === undefined ? undefined : localMs - offset * MINUTE_MS;
  } else utcMs = zonedWallToUtcMs(localMs, timeZone);
  return utcMs === undefined ? undefined : positive(utcMs / 1000 + fractionSeconds);
}

/** `Z`, `+hh`, `+hhmm`, `+hh:mm` → minutes east of UTC. */
function parseOffsetMinutes(zone: string): number | undefined {
  if (zone.toUpperCase() === 'Z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2)) : 0;
  if (hours > 23 || minutes > 59) return undefined;
  return sign * (hours * 60 + minutes);
}

// Building a DateTimeFormat costs far more than using one; zones are few, so keep one per zone.
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat | undefined {
  let f = formatters.get(timeZone);
  if (f) return f;
  try {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
  } catch {
    return undefined; // not an IANA zone: the time cannot be placed
  }
  formatters.set(timeZone, f);
  return f;
}

/** Offset of `timeZone` from UTC at instant `utcMs`, in milliseconds (wall time − UTC). */
function zoneOffsetMs(f: Intl.DateTimeFormat, utcMs: number): number | undefined {
  const whole = Math.floor(utcMs / 1000) * 1000;
  const parts: Record<string, number> = {};
  for (const p of f.formatToParts(new Date(whole))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const { year, month, day, hour, minute, second } = parts;
  if (year === undefined || month === undefined || day === undefined) return undefined;
  if (hour === undefined || minute === undefined || second === undefined) return undefined;
  return Date.UTC(year, month - 1, day, hour, minute, second) - whole;
}

/**
 * The instant whose wall time in `timeZone` is `localMs`. Across a DST change the offsets a day
 * before and a day after bracket the transition. Like Temporal's "compatible" disambiguation: a
 * repeated wall time (autumn) takes the earlier instant; a skipped one (spring) is moved forward
 * by the gap, i.e. read with the offset from before the change.
 */
function zonedWallToUtcMs(localMs: number, timeZone: string): number | undefined {
  // The default zone: no offset to look up (Intl lookups dominated polls of many Action jobs).
  if (timeZone === 'UTC') return localMs;
  const f = formatterFor(timeZone);
  if (!f) return undefined;
  const before = zoneOffsetMs(f, localMs - DAY_MS);
  const after = zoneOffsetMs(f, localMs + DAY_MS);
  if (before === undefined || after === undefined) return undefined;
  const candidates = [localMs - before, localMs - after].filter((t) => t + (zoneOffsetMs(f, t) ?? NaN) === localMs);
  return candidates.length > 0 ? Math.min(...candidates) : localMs - before;
}

/** Days from `nowSeconds` to the expiry, unrounded; negative once expired. */
export function daysUntilExpiry(expiryTimestamp: number, nowSeconds: number): number {
  return (expiryTimestamp - nowSeconds) / 86_400;
}

/**
 * The calendar day of the instant `unixSeconds` in `timeZone`, as `yyyy-mm-dd`, moved by `addDays`
 * whole days (calendar days: no daylight-saving arithmetic is involved); undefined for an unknown zone.
 */
export function dayInZone(unixSeconds: number, timeZone: string, addDays = 0): string | undefined {
  const ms = unixSeconds * 1000;
  let offset = 0;
  if (timeZone !== 'UTC') {
    const f = formatterFor(timeZone);
    const zoned = f === undefined ? undefined : zoneOffsetMs(f, ms);
    if (zoned === undefined) return undefined;
    offset = zoned;
  }
  const wall = new Date(ms + offset);
  const day = new Date(Date.UTC(wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate() + addDays));
  return day.toISOString().slice(0, 10);
}

/**
 * Retry-After (RFC 9110 §10.2.3) as a wait in ms: delta-seconds, or an HTTP-date read against the
 * answering server's own Date header, its clock (a server 10 minutes ahead of ours must not turn
 * 30 s into 630 s, one behind must not turn them into none); against `nowMs` when it sent no
 * readable Date. A date in the past means "now" (0). Undefined when absent or unreadable.
 */
export function retryAfterMs(value: string | string[] | undefined, serverDate: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  const at = httpDate(raw);
  if (at === undefined) return undefined;
  const date = httpDate((Array.isArray(serverDate) ? serverDate[0] : serverDate)?.trim() ?? '');
  return Math.max(0, at - (date ?? nowMs));
}

/** An HTTP-date in ms, or undefined; only a date that names a weekday or month (Date.parse also takes "5.5" or "-1"). */
function httpDate(text: string): number | undefined {
  if (!/[a-z]{3}/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : at;
}
