/**
 * Each counter, histogram and summary series' start (OpenMetrics `_created`): the time this process
 * first saw its label set counted, kept per family and label set for as long as the process runs
 * (docs/formats.md, "`_created`": why a start is never older than the process). A label set is seen
 * when the exporter's own families of a scope (the whole /metrics, a stack's target, the exporter's
 * own) are read for a response, at most every SELF_METRICS_MAX_AGE_MS while scraped; one new at a
 * read starts at the scope's previous read (the process's start for the first), so that the start
 * is older than the scrape that first sees it: Prometheus 3 drops a start newer than its scrape.
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
  /** When each scope was last read. */
  private readonly looked = new Map<string, number>();
  /** Before this nothing was counted: the process's start, or a stack's removal (forget). */
  private since: number;

  /** `now`: unix seconds. */
  constructor(private readonly now: () => number) {
    this.since = now();
  }

  /**
   * The families of `scope` with each started series' start; a label set not seen before starts at
   * the scope's previous read. Without a scope (a read of some families only: ?name[]=) it starts now.
   */
  annotate(families: readonly Family[], scope?: string): Family[] {
    const now = this.now();
    const from = scope === undefined ? now : Math.min(now, this.looked.get(scope) ?? this.since);
    if (scope !== undefined) this.looked.set(scope, now);
    return families.map((f) => {
      if (!STARTED.has(f.family.type)) return f;
      return {
        family: f.family,
        series: f.series.map((s) => {
          const key = keyOf(f.family.name, s.labels);
          let created = this.starts.get(key);
          if (created === undefined) this.starts.set(key, (created = from));
          return { ...s, created };
        }),
      };
    });
  }

  /** A stack gone from the configuration: its counters went with it, and so do their starts (a stack added again counts from 0, from then). */
  forget(stack: string): void {
    const mark = `\u0000stack\u0001${stack}`;
    for (const key of this.starts.keys()) {
      const at = key.indexOf(mark);
      if (at >= 0 && (key.length === at + mark.length || key[at + mark.length] === '\u0000')) this.starts.delete(key);
    }
    // Its series may be counted again (a reload adds it back): they start after this, not at a read before it.
    const now = this.now();
    this.since = now;
    for (const scope of this.looked.keys()) this.looked.set(scope, now);
  }
}
