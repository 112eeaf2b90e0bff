/** Bounded measuring loops and the statistics the benchmark reports. */

export interface Bounds {
  /** Stop after this many iterations … */
  readonly maxCount: number;
  /** … or once this much time has passed, whichever comes first. */
  readonly maxMs: number;
}

export interface Distribution {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** Nearest-rank percentile of sorted values; NaN for an empty list. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
  };
}

/**
 * Runs `step` repeatedly within `bounds` and returns each run's duration in ms. `before` runs
 * ahead of each step, outside the measured time (e.g. to invalidate a cache).
 */
export async function timeRepeatedly(
  step: () => Promise<unknown> | unknown,
  bounds: Bounds,
  before?: () => void,
): Promise<number[]> {
  const durations: number[] = [];
  const deadline = performance.now() + bounds.maxMs;
  for (let i = 0; i < bounds.maxCount && performance.now() < deadline; i++) {
    before?.();
    const t0 = performance.now();
    await step();
    durations.push(performance.now() - t0);
  }
  return durations;
}
