/**
 * The checks the evidence harnesses rely on must be able to fail: the strict exposition reader, and
 * the budget and busiest-minute readings of a request log (test/faults/matrix.ts).
 */
import { describe, expect, it } from 'vitest';
import type { RequestRecord } from '../../src/simulator/api.js';
import { budgetBreach, busiestMinute } from '../faults/matrix.js';
import { ExpositionError, parseExposition, sampleValue } from './exposition.js';

const at = (ms: number[]): RequestRecord[] =>
  ms.map((t) => ({ method: 'GET', rawPath: '/', rawQuery: '', endpoint: 'license', headers: {}, status: 200, at: t, bytes: 0 }));

describe('exposition reader', () => {
  it('reads a valid exposition', () => {
    const text = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="q\\"\\\\\\n"} 3\nb NaN\nc{y="1",} +Inf 1700000000000\n';
    const parsed = parseExposition(text);
    expect(sampleValue(parsed, 'a_total', { x: 'q"\\\n' })).toBe(3);
    expect(parsed.samples).toHaveLength(3);
  });

  it.each([
    ['no final newline', 'a 1'],
    ['bad metric name', '1a 1\n'],
    ['bad escape', 'a{x="\\t"} 1\n'],
    ['unterminated label value', 'a{x="1} 1\n'],
    ['value not a float', 'a 1,5\n'],
    ['duplicate series', 'a{x="1"} 1\na{x="1"} 2\n'],
    ['label twice', 'a{x="1",x="2"} 1\n'],
    ['TYPE after samples', 'a 1\n# TYPE a gauge\n'],
    ['second TYPE', '# TYPE a gauge\n# TYPE a gauge\na 1\n'],
    ['unknown type', '# TYPE a thing\n'],
    ['lone surrogate', 'a{x="\uD800"} 1\n'],
  ])('refuses %s', (_what, text) => {
    expect(() => parseExposition(text)).toThrow(ExpositionError);
  });
});

describe('request-log budget checks', () => {
  it('counts the busiest rolling minute', () => {
    expect(busiestMinute(at([0, 10_000, 59_999, 60_000, 61_000]))).toBe(4);
    expect(busiestMinute([])).toBe(0);
  });

  it('allows the measured event-loop stall: a minute of sends may arrive in a minute less the stall', () => {
    // Sent at 0 and 60 s (two minutes' worth), the first one logged 500 ms late.
    expect(busiestMinute(at([500, 60_000]))).toBe(2);
    expect(busiestMinute(at([500, 60_000]), 500)).toBe(1);
  });

  it('accepts a log that keeps to a token bucket and names the window that does not', () => {
    // 240/min: burst 10, then 4 a second.
    const steady = at(Array.from({ length: 40 }, (_, i) => i * 250));
    expect(budgetBreach(steady, 240, 0)).toBeUndefined();
    const burst = at(Array.from({ length: 20 }, () => 0));
    expect(budgetBreach(burst, 240, 0)).toMatch(/^\d+ requests within 0 ms/);
    // 15 at once: burst 10 + 1 for rounding + 4 a second of stall, measured.
    const bunched = at(Array.from({ length: 15 }, () => 0));
    expect(budgetBreach(bunched, 240, 0)).toMatch(/^12 requests within 0 ms/);
    expect(budgetBreach(bunched, 240, 1000)).toBeUndefined();
  });
});
