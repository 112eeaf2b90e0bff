import { describe, expect, it } from 'vitest';
import { backoffDelayMs } from '../../src/cmdb/backoff.js';

const retries = { max: 5, minDelaySeconds: 1, maxDelaySeconds: 10, maxRetryAfterSeconds: 60 };

describe('backoffDelayMs', () => {
  it.each([
    // retry, random, expected ms: ceiling = min(max, min * 2^(retry+1)), delay = min + r * (ceiling - min)
    [0, 0, 1000],
    [0, 1, 2000],
    [1, 1, 4000],
    [2, 1, 8000],
    [3, 1, 10_000],
    [10, 1, 10_000],
    [2, 0.5, 4500],
    [5, 0, 1000],
  ])('retry %i with random %f waits %i ms', (retry, random, ms) => {
    expect(backoffDelayMs(retry, retries, () => random)).toBe(ms);
  });

  it('grows its ceiling exponentially and stays within [min, max] for any random value', () => {
    for (let retry = 0; retry < 8; retry++) {
      for (const r of [0, 0.1, 0.37, 0.5, 0.99, 1]) {
        const d = backoffDelayMs(retry, retries, () => r);
        expect(d).toBeGreaterThanOrEqual(1000);
        expect(d).toBeLessThanOrEqual(10_000);
      }
    }
  });

  it('draws the delay from the jitter source (full jitter), so two draws differ', () => {
    expect(backoffDelayMs(3, retries, () => 0.2)).not.toBe(backoffDelayMs(3, retries, () => 0.8));
  });

  it('clamps a jitter source outside [0, 1]', () => {
    expect(backoffDelayMs(0, retries, () => 7)).toBe(2000);
    expect(backoffDelayMs(0, retries, () => -1)).toBe(1000);
  });
});
