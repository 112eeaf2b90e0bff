import type { Labels } from '../metrics/sample.js';

/**
 * Remembers, per state-set metric and entity, every state seen since start-up, so that a state
 * set keeps a 0-valued series for states the entity was in before (metrics.md: "states: every value
 * seen … since start-up"). One instance per stack; entities that vanish are forgotten through
 * `retain` so the memory cannot grow without bound.
 */
export class StateMemory {
  private readonly seen = new Map<string, Map<string, Set<string>>>();

  /**
   * The states to export for one entity: `base` (always present, in its order), then every other
   * state seen so far, sorted. `current` is recorded first; empty or undefined is not a state.
   */
  states(metric: string, key: Labels, current: string | undefined, base: readonly string[] = []): string[] {
    let byKey = this.seen.get(metric);
    if (!byKey) this.seen.set(metric, (byKey = new Map()));
    const k = keyOf(key);
    let set = byKey.get(k);
    if (!set) byKey.set(k, (set = new Set()));
    if (current) set.add(current);
    const extra = [...set].filter((s) => !base.includes(s)).sort();
    return [...base, ...extra];
  }

  /** Forget the entities of `metric` whose key is not among `live`. */
  retain(metric: string, live: readonly Labels[]): void {
    const byKey = this.seen.get(metric);
    if (!byKey) return;
    const keep = new Set(live.map(keyOf));
    for (const k of byKey.keys()) if (!keep.has(k)) byKey.delete(k);
  }
}

function keyOf(labels: Labels): string {
  return JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
}
