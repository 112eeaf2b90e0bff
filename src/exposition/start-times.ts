/**
 * Each counter, histogram and summary series' start (OpenMetrics `_created`, protobuf
 * `created_timestamp`): the time this process first saw its label set counted, kept per family and
 * label set for as long as the process runs. The exporter's counters are prom-client's and count
 * from 0 in each process, so a start is never older than the process: a start kept across a
 * restart would claim a count the new process does not have.
 *
 * A label set is seen when the exporter's own families are read for a response (at most every
 * SELF_METRICS_MAX_AGE_MS while scraped) or by `observe`, so a start is at most that much later
 * than the first count.
 */
import type { Family } from './family.js';

const STARTED = new Set(['counter', 'histogram', 'summary']);

function keyOf(name: string, labels: Family['series'][number]['labels']): string {
  let key = name;
  for (const [k, v] of Object.entries(labels)) if (k !== 'le' && k !== 'quantile') key += `\u0000${k}\u0001${String(v)}`;
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

  get size(): number {
    return this.starts.size;
  }
}
