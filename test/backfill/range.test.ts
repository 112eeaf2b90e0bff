import { describe, expect, it } from 'vitest';
import { BackfillRangeError, headBlockWarning, parseRange, parseStep, parseTime, rangeWords } from '../../src/backfill/range.js';

const NOW = Date.parse('2026-11-24T12:00:00Z') / 1000;
const H = 3600;
const D = 86_400;

describe('backfill range parsing', () => {
  it('reads now, now-<duration>, a bare duration, an ISO time or day, and unix seconds', () => {
    expect(parseTime('--to', 'now', NOW)).toBe(NOW);
    expect(parseTime('--to', 'now-3h', NOW)).toBe(NOW - 3 * H);
    expect(parseTime('--to', 'now - 1h30m', NOW)).toBe(NOW - 5400);
    expect(parseTime('--from', '30d', NOW)).toBe(NOW - 30 * D);
    expect(parseTime('--from', '2026-11-01', NOW)).toBe(Date.parse('2026-11-01T00:00:00Z') / 1000);
    expect(parseTime('--from', '2026-11-01T06:00:00+02:00', NOW)).toBe(Date.parse('2026-11-01T04:00:00Z') / 1000);
    expect(parseTime('--from', '1794000000', NOW)).toBe(1794000000);
  });

  it('defaults the end to 3 hours before now and the step to each group’s own', () => {
    expect(parseRange({ from: '14d' }, NOW)).toEqual({ from: NOW - 14 * D, to: NOW - 3 * H, step: undefined, intoHead: false, toText: 'now-3h' });
    expect(parseRange({ from: '2d', to: 'now-1d', step: '1m' }, NOW).step).toBe(60);
  });

  it.each([
    [{ from: '1d', to: '2d' }, '--from', 'is not before --to'],
    [{ from: '2d', to: '2d' }, '--from', 'is not before --to'],
    [{ from: 'now-1h' }, '--from', 'is not before --to'],
    [{ from: '2030-01-01' }, '--from', 'is in the future'],
    [{ from: '1d', to: '2030-01-01T00:00:00Z' }, '--to', 'is in the future'],
    [{ from: '1d', step: '500ms' }, '--step', 'below the smallest step of 1s'],
    [{ from: '1d', step: '0' }, '--step', 'below the smallest step of 1s'],
    [{ from: '1d', step: 'often' }, '--step', 'is not a duration'],
    [{ from: 'yesterday' }, '--from', 'is not a time'],
    [{ from: '3x' }, '--from', 'is not a time'],
    [{}, '--from', 'is required'],
  ])('refuses %j with a message naming %s', (opts, flag, text) => {
    let error: unknown;
    try {
      parseRange(opts, NOW);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BackfillRangeError);
    expect((error as BackfillRangeError).flag).toBe(flag);
    expect((error as Error).message).toContain(text);
    expect((error as Error).message.startsWith(`${flag}: `)).toBe(true);
  });

  it('a search for gaps by remote write ends now by default; blocks keep their 3 hours', () => {
    expect(parseRange({ from: '7d', upToNow: true }, NOW)).toMatchObject({ from: NOW - 7 * D, to: NOW, toText: 'now', intoHead: true });
    expect(parseRange({ from: '7d', upToNow: false }, NOW)).toMatchObject({ to: NOW - 3 * H, toText: 'now-3h', intoHead: false });
    expect(parseRange({ from: '7d', to: 'now-1d', upToNow: true }, NOW).to).toBe(NOW - D);
  });

  it('names the range in words: how far back, up to when', () => {
    expect(rangeWords(NOW - 7 * D, NOW, NOW)).toBe('7d up to now');
    expect(rangeWords(NOW - 7 * D, NOW - 3 * H, NOW)).toBe('7d up to 3h ago');
    expect(rangeWords(NOW - 15 * D, NOW - 1, NOW)).toBe('15d up to now');
    expect(rangeWords(NOW - 9 * H - 37, NOW - 3 * H - 637, NOW)).toBe('9h1m up to 3h11m ago');
  });

  it('accepts an end up to now; the head-block warning is said only where it applies: blocks into a Prometheus before 2.39, or one not known', () => {
    const r = parseRange({ from: '1d', to: 'now' }, NOW);
    expect(r.to).toBe(NOW);
    expect(headBlockWarning(r, undefined)).toMatch(/within 3h of now.*before 2\.39 ignores a block overlapping it.*allow-overlapping-blocks/);
    expect(headBlockWarning(r, '2.38.0')).toMatch(/Prometheus 2\.38\.0 \(before 2\.39\) ignores/);
    expect(headBlockWarning(r, '2.42.0+ds')).toBeUndefined();
    expect(headBlockWarning(r, '3.5.3')).toBeUndefined();
    expect(headBlockWarning(parseRange({ from: '1d' }, NOW), undefined)).toBeUndefined();
  });

  it('a step of exactly 1s is the smallest accepted', () => {
    expect(parseStep('1s')).toBe(1);
  });
});
