/**
 * The `counters` part of a stack's state (--storage.path): the value and the start of every counter
 * series of the stack's own instruments (each series with its `stack` label: requests, token
 * requests, bytes read, scans, …), so that a restart goes on counting from where the last process
 * stopped and each series keeps its start (OpenMetrics `_created`, protobuf `created_timestamp`).
 *
 * Made from the stack's registry and the starts the exposition serves (StartTimes: a series not
 * seen yet starts at the write), and read back before the stack's first scrape: each value is
 * added to the fresh counter (prom-client's `inc`), each start given to StartTimes.
 *
 * Not kept, and so starting in each process: the histograms (a prom-client histogram takes
 * observations, not bucket counts; its count, sum and buckets start again at 0 and so does its
 * start), the process-wide counters (no `stack` label) and prom-client's process metrics. The
 * gauges are no counters: the CMDB's figures are the `store` part's.
 */
import { Counter } from 'prom-client';
import { z } from 'zod';
import { FAMILIES } from '../metrics/catalogue.js';
import type { SelfRegistries } from '../metrics/instruments.js';
import type { StartTimes } from './start-times.js';

export const COUNTERS_STATE_VERSION = 1;

/** A series: its labels but `stack` (the file is the stack's), its value, its start (unix seconds). */
type KeptSeries = readonly [labels: Readonly<Record<string, string>>, value: number, start: number];

/** What a restart keeps of a stack's counters: per family, its series. */
export interface CountersState {
  readonly v: typeof COUNTERS_STATE_VERSION;
  readonly families: Readonly<Record<string, readonly KeptSeries[]>>;
}

const CountersStateSchema = z.object({
  v: z.literal(COUNTERS_STATE_VERSION),
  families: z.record(
    z.string().regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/).max(200),
    z.array(z.tuple([z.record(z.string().max(200), z.string().max(500)), z.number().finite().nonnegative(), z.number().finite().positive()])),
  ),
});

/** Label names a kept series of `name` may have: the catalogue's, `stack` aside; undefined for a family that is not a per-stack counter. */
function keptLabels(name: string): ReadonlySet<string> | undefined {
  const f = FAMILIES.get(name);
  if (!f || f.type !== 'counter' || f.origin !== 'registry' || !f.labels.includes('stack')) return undefined;
  return new Set(f.labels.filter((l) => l !== 'stack'));
}

/**
 * `state` validated as the counters part of this version, or undefined. A family this version does
 * not count per stack (one a later version added) is left out; a series of a known family with a
 * label it does not have makes the part invalid.
 */
export function countersStateFrom(state: unknown): CountersState | undefined {
  const parsed = CountersStateSchema.safeParse(state);
  if (!parsed.success) return undefined;
  const families: Record<string, KeptSeries[]> = {};
  for (const [name, series] of Object.entries(parsed.data.families)) {
    const allowed = keptLabels(name);
    if (!allowed) continue;
    if (series.some(([labels]) => Object.keys(labels).some((l) => !allowed.has(l)))) return undefined;
    families[name] = series;
  }
  return { v: COUNTERS_STATE_VERSION, families };
}

/** The counters of every stack with their starts: the `counters` part made and restored. */
export class CounterState {
  constructor(
    private readonly registries: SelfRegistries,
    private readonly starts: StartTimes,
  ) {}

  /** The stack's counters as they are now, each series with its start (a series not seen yet starts now). */
  async exportState(stack: string): Promise<CountersState> {
    const families: Record<string, KeptSeries[]> = {};
    for (const metric of this.registries.stack(stack)?.getMetricsAsArray() ?? []) {
      if (!(metric instanceof Counter)) continue;
      // A counter's get() reads its values as it is called (no collect function): one moment for all.
      const { name, values } = await metric.get();
      families[name] = values.map((v) => {
        const labels: Record<string, string> = {};
        for (const [k, l] of Object.entries(v.labels)) if (k !== 'stack' && l !== undefined) labels[k] = String(l);
        return [labels, v.value, this.starts.startOf(name, v.labels as Record<string, string | number>)] as const;
      });
    }
    return { v: COUNTERS_STATE_VERSION, families };
  }

  /**
   * Counts on from what an earlier process kept (countersStateFrom): each series' value is added to
   * the stack's counter and its start given back. Once per stack, when it starts with the process
   * and before its first scrape (src/stacks.ts); a reload never restores.
   */
  restore(stack: string, state: CountersState): void {
    const registry = this.registries.stack(stack);
    for (const [name, series] of Object.entries(state.families)) {
      const metric = registry?.getSingleMetric(name);
      if (!(metric instanceof Counter)) continue;
      for (const [kept, value, start] of series) {
        const labels = { stack, ...kept };
        metric.inc(labels, value);
        this.starts.seed(name, labels, start);
      }
    }
  }

  /** A stack removed from the configuration: its counters went with its registry, their starts go too. */
  forget(stack: string): void {
    this.starts.forget(stack);
  }
}
