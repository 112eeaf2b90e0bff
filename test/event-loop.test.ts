/**
 * The event-loop delay figures (nodejs_eventloop_lag_*_seconds) read by several scrapers at once
 * (issue 43): prom-client's collector resets its histogram at every collect, so the second of two
 * collects at one moment reads an empty one (min 2^63 ns, mean NaN); the windowed figures
 * (src/event-loop.ts) serve the last complete window to both. Two collects "at one moment" are two
 * started in the same turn of the event loop, as two scrapes rendered together: no timing decides it.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/app.js';
import { EVENT_LOOP_FIGURES, windowedEventLoopDelay, type DelayHistogram } from '../src/event-loop.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { waitFor } from './helpers/wait.js';
import { configFor, stackFor, startExporter } from './helpers/exporter.js';

type Json = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** The event-loop delay figures of a collect, by name (undefined: no value). */
const figuresOf = (json: Json) => new Map(EVENT_LOOP_FIGURES.map((name) => [name, json.find((m) => m.name === name)?.values[0]?.value]));

/** Two collects of the registry started in one turn of the event loop. */
const twoAtOnce = (registry: Registry) => Promise.all([registry.getMetricsAsJSON(), registry.getMetricsAsJSON()]);

/** Every figure a number of seconds a process can show: finite, not negative, under an hour (2^63 ns is 292 years). */
function insane(figures: ReadonlyMap<string, number | undefined>): string[] {
  return [...figures].filter(([, v]) => v === undefined || !Number.isFinite(v) || v < 0 || v > 3600).map(([name, v]) => `${name} ${String(v)}`);
}

describe("prom-client's own event-loop collector", () => {
  it('reads an empty window at the second of two collects at one moment: min 2^63 ns, mean NaN (why it is replaced)', async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const [, second] = await twoAtOnce(registry);
    const figures = figuresOf(second);
    expect(figures.get('nodejs_eventloop_lag_min_seconds')).toBeGreaterThan(9e9);
    expect(figures.get('nodejs_eventloop_lag_mean_seconds')).toBeNaN();
  });
});

describe('the windowed event-loop delay figures', () => {
  it('serve two collects at one moment the same complete window, on the real histogram', async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    windowedEventLoopDelay(registry);
    // The first window closes at the first collect after the histogram's first sample (10 ms).
    await waitFor('the first window', async () => (figuresOf(await registry.getMetricsAsJSON()).get('nodejs_eventloop_lag_min_seconds') !== undefined ? true : undefined), { timeoutMs: 30_000 });
    for (let round = 0; round < 3; round++) {
      const [a, b] = await twoAtOnce(registry);
      expect(insane(figuresOf(a))).toEqual([]);
      expect(insane(figuresOf(b))).toEqual([]);
      expect(figuresOf(b)).toEqual(figuresOf(a));
    }
    // prom-client's own probe stays.
    expect((await registry.getMetricsAsJSON()).some((m) => m.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
  });

  /** A histogram whose samples the test sets (node's records one every 10 ms of real time). */
  function fakeHistogram() {
    const empty = { count: 0, min: 9_223_372_036_854_776_000, max: 0, mean: NaN, stddev: NaN, p: NaN };
    let state = { ...empty };
    const h: DelayHistogram & { record(ms: number[]): void; resets: number } = {
      get count() {
        return state.count;
      },
      get min() {
        return state.min;
      },
      get max() {
        return state.max;
      },
      get mean() {
        return state.mean;
      },
      get stddev() {
        return state.stddev;
      },
      percentile: () => state.p,
      reset() {
        state = { ...empty };
        h.resets++;
      },
      resets: 0,
      record(ms: number[]) {
        const ns = ms.map((x) => x * 1e6);
        const mean = ns.reduce((s, x) => s + x, 0) / ns.length;
        state = { count: ns.length, min: Math.min(...ns), max: Math.max(...ns), mean, stddev: 0, p: mean };
      },
    };
    return h;
  }

  it('close a window only after WINDOW_MS and only on a sample: a collect never reads an empty one', async () => {
    const registry = new Registry();
    const histogram = fakeHistogram();
    let clock = 0;
    windowedEventLoopDelay(registry, { histogram, windowMs: 5000, monotonicMs: () => clock });
    const min = async () => figuresOf(await registry.getMetricsAsJSON()).get('nodejs_eventloop_lag_min_seconds');
    // No sample yet: no value, rather than 2^63 ns.
    expect(await min()).toBeUndefined();
    histogram.record([10, 20, 30]);
    expect(await min()).toBe(0.01);
    expect(histogram.resets).toBe(1);
    // Within the window: the same figures, however many collect, and no reset.
    histogram.record([50]);
    clock = 4999;
    const [a, b] = await twoAtOnce(registry);
    expect(figuresOf(a).get('nodejs_eventloop_lag_min_seconds')).toBe(0.01);
    expect(figuresOf(b)).toEqual(figuresOf(a));
    expect(histogram.resets).toBe(1);
    // The window is due: the next collect closes it; the one after keeps it.
    clock = 5000;
    const [c, d] = await twoAtOnce(registry);
    expect(figuresOf(c).get('nodejs_eventloop_lag_min_seconds')).toBe(0.05);
    expect(figuresOf(c).get('nodejs_eventloop_lag_mean_seconds')).toBe(0.05);
    expect(figuresOf(d)).toEqual(figuresOf(c));
    expect(histogram.resets).toBe(2);
    // Due again, but nothing recorded since (an event loop blocked the whole window): the last window stays.
    clock = 20_000;
    expect(insane(figuresOf(await registry.getMetricsAsJSON()))).toEqual([]);
    expect(await min()).toBe(0.05);
    expect(histogram.resets).toBe(2);
  });
});

describe('two scrapes of the exporter at one moment', () => {
  let sim: SimulatorServer;
  let app: App;

  beforeAll(async () => {
    sim = await startSimulator({});
    ({ app } = await startExporter(configFor([stackFor(sim)]), { serve: true, defaultMetrics: true }));
  });
  afterAll(async () => {
    await app?.close(0);
    await sim?.close();
  });

  /** The figures of an exposition body (either format). */
  const figuresIn = (body: string) => new Map(EVENT_LOOP_FIGURES.map((name) => [name, ((v) => (v === undefined ? undefined : Number(v)))(new RegExp(`^${name} (\\S+)$`, 'm').exec(body)?.[1])]));

  it('both read sane figures: the text and OpenMetrics bodies rendered together, and two requests over HTTP', async () => {
    await waitFor('the first window', async () => (figuresIn(Buffer.concat((await app.metrics('text')).plain.parts).toString()).get('nodejs_eventloop_lag_min_seconds') !== undefined ? true : undefined), { timeoutMs: 30_000 });
    // Each format renders the exporter's own metrics for itself: two collects in one turn.
    const [text, om] = await Promise.all([app.metrics('text'), app.metrics('openmetrics')]);
    for (const r of [text, om]) expect(insane(figuresIn(Buffer.concat(r.plain.parts).toString()))).toEqual([]);
    const scrape = (accept: string) => fetch(`${app.url ?? ''}/metrics`, { headers: { accept } }).then((r) => r.text());
    const bodies = await Promise.all([scrape('text/plain;version=0.0.4'), scrape('application/openmetrics-text;version=1.0.0'), scrape('text/plain;version=0.0.4')]);
    for (const body of bodies) expect(insane(figuresIn(body))).toEqual([]);
  });
});
