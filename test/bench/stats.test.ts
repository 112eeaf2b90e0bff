import { describe, expect, it } from 'vitest';
import { distribution, percentile } from '../../bench/stats.js';
import { budgetSeconds } from '../../bench/budget.js';

describe('benchmark statistics', () => {
  it.each([
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50, 5],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90, 9],
    [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99, 10],
    [[7], 50, 7],
  ])('percentile(%j, %s) is the nearest-rank value %s', (values, p, expected) => {
    expect(percentile(values, p)).toBe(expected);
  });

  it('percentile of no values is NaN, not a number that looks measured', () => {
    expect(percentile([], 50)).toBeNaN();
  });

  it('distribution sorts its input and reports count, max and mean', () => {
    expect(distribution([3, 1, 2])).toEqual({ count: 3, p50: 2, p90: 3, p99: 3, max: 3, mean: 2 });
  });
});

describe('request budget model', () => {
  it('sends the burst at once and the rest at the budget pace', () => {
    // 50 a minute: burst 9 (the client's min(10, ceil(50/6))), then 1.2 s a request.
    expect(budgetSeconds(19, 50)).toBeCloseTo(12, 5);
    expect(budgetSeconds(5, 50)).toBe(0);
  });
});
