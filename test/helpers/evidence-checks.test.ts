/**
 * The checks the evidence harnesses rely on must be able to fail: the strict exposition reader, and
 * the budget checks on what the budget granted (test/faults/matrix.ts).
 */
import { describe, expect, it } from 'vitest';
import { WINDOW_MS } from '../../src/cmdb/budget.js';
import { budgetBreach, busiestMinute, grantsBreaches } from '../faults/matrix.js';
import { ExpositionError, parseExposition, sampleValue } from './exposition.js';

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

describe('budget checks on what the budget granted', () => {
  const grant = (at: number, plannedAt = at) => ({ at, plannedAt });

  it('counts the busiest rolling minute', () => {
    expect(busiestMinute([0, 10_000, 59_999, 60_000, 61_000])).toBe(4);
    expect(busiestMinute([])).toBe(0);
    expect(busiestMinute([0, 61_000, 62_000], WINDOW_MS)).toBe(2);
  });

  it('accepts places that keep to a token bucket and names the span that does not', () => {
    // 240/min: burst 10, then 4 a second.
    const steady = Array.from({ length: 40 }, (_, i) => i * 250);
    expect(budgetBreach(steady, 240)).toBeUndefined();
    const burst = Array.from({ length: 20 }, () => 0);
    expect(budgetBreach(burst, 240)).toMatch(/^\d+ requests within 0 ms/);
    // 15 at once: burst 10 + 1 for rounding.
    expect(budgetBreach(Array.from({ length: 15 }, () => 0), 240)).toMatch(/^12 requests within 0 ms/);
  });

  it('fails a request that reached the CMDB without a grant, a window over the rate, and a bucket broken as planned', () => {
    const kept = Array.from({ length: 30 }, (_, i) => grant(i * 1000));
    expect(grantsBreaches(30, kept, 60)).toEqual([]);
    expect(grantsBreaches(31, kept, 60)).toEqual(['31 requests reached the CMDB, 30 were granted by the budget: 1 went around it']);
    // 61 granted within 62 s at 60 a minute: the window is broken even though each was planned in time.
    const crowded = Array.from({ length: 61 }, (_, i) => grant(i * 1000));
    expect(grantsBreaches(61, crowded, 60)).toEqual([`61 requests granted within ${WINDOW_MS} ms, above 60`]);
    // Let through late (a timer that fired late) they may bunch; as planned they may not.
    const late = Array.from({ length: 12 }, (_, i) => grant(5000, i * 10));
    expect(grantsBreaches(12, late, 60)).toEqual([expect.stringMatching(/^token bucket: \d+ requests within \d+ ms/)]);
    const lateButPlanned = Array.from({ length: 12 }, (_, i) => grant(5000, i * 1000));
    expect(grantsBreaches(12, lateButPlanned, 60)).toEqual([]);
  });
});
