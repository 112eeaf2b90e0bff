/**
 * Each counter, histogram and summary series' start (OpenMetrics `_created`, protobuf
 * `created_timestamp`): when its label set first counted, kept per family and label set.
 *
 * Across a restart with --storage.path a start is kept only together with its count: the counters
 * of a stack (every series with a `stack` label) are kept in the stack's state, values and starts
 * (the `counters` part, counter-state.ts), and given back here (`seed`) before the first scrape,
 * so the counter goes on from its value and keeps its start. Everything else counts from 0 in each
 * process and so starts in it: the process-wide counters (no `stack` label; prom-client's process
 * metrics), the histograms, and every series when no state is kept. A start kept without its count
 * would claim a count the new process does not have.
 *
 * A label set is seen when the exporter's own families are read for a response (at most every
 * SELF_METRICS_MAX_AGE_MS while scraped), by `startOf` (a state write) or by `observe`, so a start
 * is at most that much later than the first count.
 */
import type { Family } from './family.js';

const STARTED = new Set(['counter', 'histogram', 'summary']);

type Labels = Family['series'][number]['labels'];

/** The series' key: the family and its labels by name (in whatever order they were counted with), bucket and quantile aside. */
function keyOf(name: string, labels: Labels): string {
  let key = name;
  for (const k of Object.keys(labels).sort()) if (k !== 'le' && k !== 'quantile') key += `\u0000${k}\u0001${String(labels[k])}`;
  return key;
}

export class StartTimes {
  private readonly starts = new Map<string, number>();

  /** `now`: unix seconds. */
  constructor(private readonly now: () => number) {}

  /** The families with each started series' start; a label set not seen before starts now. */
  annotate(families: readonly Family[]): Family[] {
    const now = this.now();
    return families.map((f) => {
      if (!STARTED.has(f.family.type)) return f;
      return {
        family: f.family,
        series: f.series.map((s) => {
          const key = keyOf(f.family.name, s.labels);
          let created = this.starts.get(key);
          if (created === undefined) this.starts.set(key, (created = now));
          return { ...s, created };
        }),
      };
    });
  }

  /** The series' start (unix seconds); a label set not seen before starts now. */
  startOf(name: string, labels: Labels): number {
    const key = keyOf(name, labels);
    let start = this.starts.get(key);
    if (start === undefined) this.starts.set(key, (start = this.now()));
    return start;
  }

  /** A series whose count was restored (--storage.path) keeps the start it counted from. */
  seed(name: string, labels: Labels, start: number): void {
    this.starts.set(keyOf(name, labels), start);
  }

  /** A stack gone from the configuration: its counters went with it, and so do their starts (a stack added again counts from 0, from then). */
  forget(stack: string): void {
    const mark = `\u0000stack\u0001${stack}`;
    for (const key of this.starts.keys()) {
      const at = key.indexOf(mark);
      if (at >= 0 && (key.length === at + mark.length || key[at + mark.length] === '\u0000')) this.starts.delete(key);
    }
  }

  get size(): number {
    return this.starts.size;
  }
}
