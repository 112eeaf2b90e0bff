/** Retry timing: exponential back-off with jitter (the server's Retry-After is read by retryAfterMs of src/time.ts). */
import type { RetryConfig } from '../config/types.js';

/**
 * Delay before retry number `retry` (0 for the first retry), in ms. The ceiling doubles per retry
 * from 2 × minDelay up to maxDelay; the delay is drawn uniformly between minDelay and that ceiling
 * ("full jitter" above a floor), so concurrent clients spread out without ever retrying at once.
 */
export function backoffDelayMs(retry: number, retries: RetryConfig, random: () => number): number {
  const min = retries.minDelaySeconds * 1000;
  const max = Math.max(min, retries.maxDelaySeconds * 1000);
  const ceiling = Math.min(max, min * 2 ** (retry + 1));
  const r = Math.min(Math.max(random(), 0), 1);
  return min + r * (ceiling - min);
}
