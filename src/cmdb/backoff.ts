/** Retry timing: exponential back-off with jitter, and the Retry-After header of a 429. */
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

/**
 * Retry-After as a wait in ms from `nowMs`: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
 * A date in the past means "now" (0). Returns undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  // Only an HTTP-date (it names a weekday or month); Date.parse would also take "5.5" or "-1".
  if (!/[a-z]{3}/i.test(raw)) return undefined;
  const at = Date.parse(raw);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
