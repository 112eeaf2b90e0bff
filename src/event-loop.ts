/**
 * The event-loop delay figures of prom-client's default metrics (nodejs_eventloop_lag_min_seconds,
 * _max, … _p99) under the same names and HELP texts, from the last closed window of at least
 * WINDOW_MS, so that any number of scrapers read them at once: prom-client's collector resets its
 * histogram at every collect (docs/metrics.md, "Process metrics"). A window closes only once it
 * holds a sample. prom-client's `nodejs_eventloop_lag_seconds` stays.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/** The shortest window: scrapes closer together than this read the same figures. */
export const WINDOW_MS = 5000;
/** prom-client's default sampling resolution of the histogram (eventLoopMonitoringPrecision). */
const RESOLUTION_MS = 10;

/** What is read of the histogram (node:perf_hooks' IntervalHistogram). */
export type DelayHistogram = Pick<IntervalHistogram, 'count' | 'min' | 'max' | 'mean' | 'stddev' | 'percentile' | 'reset'>;

const FIGURES: ReadonlyArray<readonly [name: string, help: string, read: (h: DelayHistogram) => number]> = [
  ['nodejs_eventloop_lag_min_seconds', 'The minimum recorded event loop delay.', (h) => h.min],
  ['nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay.', (h) => h.max],
  ['nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays.', (h) => h.mean],
  ['nodejs_eventloop_lag_stddev_seconds', 'The standard deviation of the recorded event loop delays.', (h) => h.stddev],
  ['nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays.', (h) => h.percentile(50)],
  ['nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays.', (h) => h.percentile(90)],
  ['nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays.', (h) => h.percentile(99)],
];

export const EVENT_LOOP_FIGURES: readonly string[] = FIGURES.map(([name]) => name);

export interface EventLoopOptions {
  readonly windowMs?: number;
  /** Monotonic ms (default performance.now). */
  readonly monotonicMs?: () => number;
  /** The histogram to read (default a new, enabled monitorEventLoopDelay at prom-client's resolution). */
  readonly histogram?: DelayHistogram;
}

function monitor(): DelayHistogram | undefined {
  try {
    const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    h.enable();
    return h;
  } catch {
    return undefined; // a runtime without it (prom-client registers none of these gauges then either)
  }
}

/** Replaces prom-client's event-loop delay gauges of `registry` (registered by collectDefaultMetrics) with windowed ones. */
export function windowedEventLoopDelay(registry: Registry, opts: EventLoopOptions = {}): void {
  const windowMs = opts.windowMs ?? WINDOW_MS;
  const monotonicMs = opts.monotonicMs ?? (() => performance.now());
  const histogram = opts.histogram ?? monitor();
  if (!histogram) return;
  let closedAt = monotonicMs();
  let figures: readonly number[] | undefined;
  /** The figures of the last closed window, closing the next one when it is due and holds a sample. */
  const current = (): readonly number[] | undefined => {
    const now = monotonicMs();
    if (histogram.count > 0 && (figures === undefined || now - closedAt >= windowMs)) {
      figures = FIGURES.map(([, , read]) => read(histogram) / 1e9);
      histogram.reset();
      closedAt = now;
    }
    return figures;
  };
  FIGURES.forEach(([name, help], i) => {
    registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const value = current()?.[i];
        if (value === undefined) this.remove();
        else this.set(value);
      },
    });
  });
}
