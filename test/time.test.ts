import { describe, expect, it } from 'vitest';
import { EPOCH_MILLISECONDS_ABOVE, daysUntilExpiry, parseDay, parseTimestamp, retryAfterMs } from '../src/time.js';

const at = (text: string) => Date.parse(text) / 1000;

describe('parseTimestamp reads every time shape the CMDB sends', () => {
  it.each<[string, unknown, number]>([
    ['ISO with Z', '2024-05-01T10:20:30Z', at('2024-05-01T10:20:30Z')],
    ['ISO with lowercase t and z', '2024-05-01t10:20:30z', at('2024-05-01T10:20:30Z')],
    ['ISO with milliseconds and +hh:mm', '2024-05-01T12:20:30.250+02:00', at('2024-05-01T10:20:30.250Z')],
    ['ISO with microseconds (Airflow start_date)', '2024-05-01T00:00:05.123456+00:00', at('2024-05-01T00:00:05Z') + 0.123456],
    ['ISO with nanoseconds', '2024-05-01T00:00:05.123456789Z', at('2024-05-01T00:00:05Z') + 0.123456789],
    ['ISO with a comma before the fraction', '2024-05-01T00:00:05,5Z', at('2024-05-01T00:00:05.500Z')],
    ['ISO with +hhmm', '2024-05-01T12:20:30+0200', at('2024-05-01T10:20:30Z')],
    ['ISO with +hh', '2024-05-01T12:20:30+02', at('2024-05-01T10:20:30Z')],
    ['ISO with a negative offset', '2024-05-01T05:20:30-05:00', at('2024-05-01T10:20:30Z')],
    ['ISO with a half-hour offset', '2024-05-01T15:50:30+05:30', at('2024-05-01T10:20:30Z')],
    ['ISO without seconds', '2024-05-01T10:20Z', at('2024-05-01T10:20:00Z')],
    ['ISO without a zone (read as UTC by default)', '2024-05-01T10:20:30', at('2024-05-01T10:20:30Z')],
    ['a space instead of T, with offset', '2024-05-01 12:20:30+02:00', at('2024-05-01T10:20:30Z')],
    ['a space before the zone', '2024-05-01 10:20:30 Z', at('2024-05-01T10:20:30Z')],
    ['yyyy-mm-dd HH:mm:ss (action_run_date)', '2024-05-01 10:20:30', at('2024-05-01T10:20:30Z')],
    ['yyyy-mm-dd HH:mm:ss with a fraction', '2024-05-01 10:20:30.75', at('2024-05-01T10:20:30.750Z')],
    ['surrounding whitespace', '  2024-05-01T10:20:30Z\n', at('2024-05-01T10:20:30Z')],
    ['yyyy-mm-dd as midnight UTC', '2024-05-01', at('2024-05-01T00:00:00Z')],
    ['29 February of a leap year', '2024-02-29T00:00:00Z', at('2024-02-29T00:00:00Z')],
    ['29 February of a 400-year leap year', '2000-02-29', at('2000-02-29T00:00:00Z')],
    ['epoch seconds as a number', 1714558830, 1714558830],
    ['fractional epoch seconds', 1714558830.5, 1714558830.5],
    ['epoch seconds as a numeric string', '1714558830', 1714558830],
    ['epoch seconds as a string with whitespace', ' 1714558830 ', 1714558830],
    ['epoch milliseconds as a number (above 1e11)', 1714558830123, 1714558830.123],
    ['epoch milliseconds as a string', '1714558830123', 1714558830.123],
    ['a Date object', new Date('2024-05-01T10:20:30Z'), at('2024-05-01T10:20:30Z')],
  ])('%s', (_name, value, expected) => {
    const got = parseTimestamp(value);
    expect(got).toBeDefined();
    expect(got).toBeCloseTo(expected, 6);
  });
});

describe('parseTimestamp returns undefined for everything that is not a time', () => {
  it.each<[string, unknown]>([
    ['zero', 0],
    ['"0"', '0'],
    ['a negative number', -1714558830],
    ['a negative numeric string', '-1714558830'],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['milliseconds beyond what a Date holds', 9e15 * 1000],
    ['month 13', '2024-13-01T00:00:00Z'],
    ['month 00', '2024-00-10T00:00:00Z'],
    ['day 00', '2024-05-00'],
    ['30 February', '2024-02-30'],
    ['29 February of a common year', '2023-02-29T00:00:00Z'],
    ['29 February of a century common year', '1900-02-29'],
    ['31 April', '2024-04-31 10:00:00'],
    ['hour 25', '2024-05-01T25:00:00Z'],
    ['hour 24', '2024-05-01T24:00:00Z'],
    ['minute 60', '2024-05-01T10:60:00Z'],
    ['second 60', '2024-05-01T10:00:60Z'],
    ['offset hour 24', '2024-05-01T10:00:00+24:00'],
    ['offset minute 60', '2024-05-01T10:00:00+01:60'],
    ['a date before 1970', '1969-12-31T23:59:59Z'],
    ['the epoch itself', '1970-01-01T00:00:00Z'],
    ['an hour without minutes', '2024-05-01T10'],
    ['a T and nothing after', '2024-05-01T'],
    ['a zone without a time', '2024-05-01Z'],
    ['a fraction without seconds', '2024-05-01T10:20.5Z'],
    ['a one-digit month', '2024-5-01'],
    ['a two-digit year', '24-05-01'],
    ['trailing garbage', '2024-05-01T10:20:30Zjunk'],
    ['a slash date', '2024/05/01'],
    ['a text for the next run', 'After Next Data Ingestion'],
    ['the in-progress text', 'Data ingestion is in progress'],
    ['an empty string', ''],
    ['whitespace', '   '],
    ['a number with an exponent as text', '1.7e9'],
    ['null', null],
    ['undefined', undefined],
    ['a boolean', true],
    ['an object', { seconds: 1714558830 }],
    ['a list', [1714558830]],
    ['an invalid Date', new Date('nope')],
    ['the text NaN', 'NaN'],
    ['NaN inside a date', '2024-05-01TNaN'],
    ['a hexadecimal text', '0x1F'],
    ['digits with separators', '1_000'],
    ['the largest double', Number.MAX_VALUE],
    ['digits that overflow to Infinity', '9'.repeat(400)],
  ])('%s', (_name, value) => {
    expect(parseTimestamp(value)).toBeUndefined();
  });
});

describe('parseTimestamp reads times without a zone in the given IANA zone', () => {
  it.each<[string, string, string, string]>([
    ['UTC', '2024-05-01 10:00:00', 'UTC', '2024-05-01T10:00:00Z'],
    ['summer time in Berlin (+02:00)', '2024-07-01 12:00:00', 'Europe/Berlin', '2024-07-01T10:00:00Z'],
    ['winter time in Berlin (+01:00)', '2024-01-15 12:00:00', 'Europe/Berlin', '2024-01-15T11:00:00Z'],
    ['just before the spring change in Berlin', '2024-03-31 01:59:59', 'Europe/Berlin', '2024-03-31T00:59:59Z'],
    ['just after the spring change in Berlin', '2024-03-31 03:00:00', 'Europe/Berlin', '2024-03-31T01:00:00Z'],
    ['a skipped wall time moves forward by the gap', '2024-03-31 02:30:00', 'Europe/Berlin', '2024-03-31T01:30:00Z'],
    ['a repeated wall time takes the earlier instant', '2024-10-27 02:30:00', 'Europe/Berlin', '2024-10-27T00:30:00Z'],
    ['just after the autumn change in Berlin', '2024-10-27 03:00:00', 'Europe/Berlin', '2024-10-27T02:00:00Z'],
    ['New York in summer (-04:00)', '2024-07-01 08:00:00', 'America/New_York', '2024-07-01T12:00:00Z'],
    ['New York in winter (-05:00)', '2024-01-15 08:00:00', 'America/New_York', '2024-01-15T13:00:00Z'],
    ['New York repeated hour takes the earlier (EDT)', '2024-11-03 01:30:00', 'America/New_York', '2024-11-03T05:30:00Z'],
    ['a southern-hemisphere zone in its summer', '2024-01-15 12:00:00', 'Australia/Sydney', '2024-01-15T01:00:00Z'],
    ['a zone with a 45-minute offset', '2024-05-01 12:00:00', 'Asia/Kathmandu', '2024-05-01T06:15:00Z'],
    ['a fraction is kept', '2024-07-01 12:00:00.5', 'Europe/Berlin', '2024-07-01T10:00:00.500Z'],
    ['the T form without a zone', '2024-07-01T12:00:00', 'Europe/Berlin', '2024-07-01T10:00:00Z'],
    ['an explicit offset wins over the zone', '2024-07-01 12:00:00+00:00', 'Europe/Berlin', '2024-07-01T12:00:00Z'],
    ['a bare date stays midnight UTC', '2024-07-01', 'Europe/Berlin', '2024-07-01T00:00:00Z'],
    ['epoch seconds ignore the zone', '1714558830', 'Asia/Tokyo', '2024-05-01T10:20:30Z'],
  ])('%s', (_name, value, zone, expected) => {
    expect(parseTimestamp(value, zone)).toBeCloseTo(at(expected), 6);
  });

  it('returns undefined, without throwing, for a zone that is not an IANA zone', () => {
    expect(parseTimestamp('2024-05-01 10:00:00', 'Mars/Olympus_Mons')).toBeUndefined();
  });
});

describe('the epoch-milliseconds heuristic', () => {
  it.each<[string, number, number]>([
    ['a value at the threshold is seconds', EPOCH_MILLISECONDS_ABOVE, EPOCH_MILLISECONDS_ABOVE],
    ['a value just above the threshold is milliseconds', EPOCH_MILLISECONDS_ABOVE + 1000, EPOCH_MILLISECONDS_ABOVE / 1000 + 1],
    ['1e11 milliseconds is 1973-03-03', 1e11 + 1, (1e11 + 1) / 1000],
  ])('%s', (_name, value, expected) => {
    expect(parseTimestamp(value)).toBeCloseTo(expected, 6);
  });
});

describe('parseDay', () => {
  it.each<[string, unknown, number | undefined]>([
    ['a day is midnight UTC', '2025-12-31', at('2025-12-31T00:00:00Z')],
    ['a full timestamp is read as a timestamp', '2025-12-31T10:00:00+01:00', at('2025-12-31T09:00:00Z')],
    ['a zoneless timestamp is read as UTC', '2025-12-31 10:00:00', at('2025-12-31T10:00:00Z')],
    ['epoch seconds are read as a timestamp', 1767139200, 1767139200],
    ['31 June is not a day', '2025-06-31', undefined],
    ['a text is not a day', 'never', undefined],
    ['an empty string is not a day', '', undefined],
    ['null is not a day', null, undefined],
    ['yyyymmdd as a number is a day, not epoch seconds in 1970', 20270331, at('2027-03-31T00:00:00Z')],
    ['yyyymmdd as text is a day', '20270331', at('2027-03-31T00:00:00Z')],
    ['yyyymmdd that does not exist is not a day', 20270231, undefined],
    ['a day before 2000 is a misread value', '1999-12-31', undefined],
    ['small epoch seconds (1970) are a misread value', 86400, undefined],
  ])('%s', (_name, value, expected) => {
    if (expected === undefined) expect(parseDay(value)).toBeUndefined();
    else expect(parseDay(value)).toBe(expected);
  });
});

describe('daysUntilExpiry (the store derives cmdb_license_days_until_expiry with it)', () => {
  it.each<[string, number, number, number]>([
    ['ten days ahead', 1_000_000 + 10 * 86_400, 1_000_000, 10],
    ['half a day ahead is unrounded', 1_000_000 + 43_200, 1_000_000, 0.5],
    ['expiring now', 1_000_000, 1_000_000, 0],
    ['negative once expired', 1_000_000, 1_000_000 + 3 * 86_400, -3],
  ])('%s', (_name, expiry, now, days) => {
    expect(daysUntilExpiry(expiry, now)).toBe(days);
  });
});

describe('retryAfterMs: the one Retry-After reader (the CMDB road and remote write)', () => {
  const now = Date.parse('2025-03-01T12:00:00Z');
  it.each<[string | string[] | undefined, number | undefined]>([
    ['0', 0],
    ['7', 7000],
    [' 120 ', 120_000],
    [['3', '9'], 3000],
    ['Sat, 01 Mar 2025 12:00:30 GMT', 30_000],
    ['Sat, 01 Mar 2025 11:00:00 GMT', 0],
    [undefined, undefined],
    ['', undefined],
    ['soon', undefined],
    ['-5', undefined],
    ['1.5', undefined],
  ])('reads %j without a Date header against our clock as %s ms', (value, ms) => {
    expect(retryAfterMs(value, undefined, now)).toBe(ms);
  });

  it("reads an HTTP-date against the server's Date header, whatever our clock says", () => {
    const server = Date.parse('2025-03-01T12:10:00Z');
    const at = new Date(server + 30_000).toUTCString();
    // The server is 10 minutes ahead: still 30 s, not 630 s.
    expect(retryAfterMs(at, new Date(server).toUTCString(), now)).toBe(30_000);
    // The server is 10 minutes behind: still 30 s, not none.
    const behind = Date.parse('2025-03-01T11:50:00Z');
    expect(retryAfterMs(new Date(behind + 30_000).toUTCString(), [new Date(behind).toUTCString()], now)).toBe(30_000);
    // A Date that cannot be read: our clock.
    expect(retryAfterMs('Sat, 01 Mar 2025 12:00:30 GMT', 'yesterday-ish', now)).toBe(30_000);
    // Delta-seconds need no clock.
    expect(retryAfterMs('5', new Date(server).toUTCString(), now)).toBe(5000);
  });
});

