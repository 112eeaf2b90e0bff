/**
 * The event-loop delay figures of prom-client's default metrics (nodejs_eventloop_lag_min_seconds,
 * _max, _mean, _stddev, _p50, _p90, _p99), made so that any number of scrapers read them at once.
 *
 * prom-client's collector (node_modules/prom-client/lib/metrics/eventLoopLag.js) reads a
 * `monitorEventLoopDelay` histogram and resets it at every collect: a second collect within the
 * histogram's resolution (10 ms) reads an empty one, min 9.22e9 s (2^63 ns) and mean NaN. Two
 * scrapes at one moment that render the exporter's own metrics each (two formats: an OpenMetrics and
 * a text Prometheus 3.5.3 at one offset read that in 64 and 9 of 86 scrapes) met it.
 *
 * Here the seven gauges are replaced by the same names and HELP texts, read from a histogram of
 * their own in windows: the first collect at least WINDOW_MS after the last window closed closes
 * the next one (its figures taken, the histogram reset), every collect serves the figures of the
 * last closed window, and a window closes only once the histogram holds a sample. So a collect
 * never reads an empty window, and scrapes within WINDOW_MS of each other read the same figures;
 * a scraper that comes every WINDOW_MS or less often reads the window since the previous scrape,
 * as with prom-client. Before the first window (the process's first 10 ms) the gauges have no
 * value. prom-client's `nodejs_eventloop_lag_seconds` (a setImmediate probe, never empty) stays.
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
