import { z } from 'zod';
import type { Labels } from '../metrics/sample.js';

/** A state not seen for this long is forgotten (its 0-valued series goes). */
export const FORGET_STATE_AFTER_SECONDS = 3600;
/** At most this many states per entity beyond the always-present ones; the least recently seen go first. */
export const MAX_EXTRA_STATES = 8;

/**
 * Remembers, per state-set metric and entity, the states seen recently, so that a state set keeps
 * a 0-valued series for states the entity was in before (metrics.md: "states: every value seen").
 * The memory is bounded three ways, so series stay flat under any churn of free-text statuses:
 * - a state not seen for FORGET_STATE_AFTER_SECONDS is forgotten;
 * - an entity keeps at most MAX_EXTRA_STATES states beyond its `base` ones (least recently seen
 *   forgotten first; the current state never);
 * - entities that vanish are forgotten through `retain`.
 * One instance per stack.
 */
export class StateMemory {
  /** metric → entity key → state → when last current (unix seconds), least recently seen first. */
  private readonly seen = new Map<string, Map<string, Map<string, number>>>();

  /**
   * The states to export for one entity at time `now`: `base` (always present, in its order), then
   * the other states remembered, sorted. `current` is recorded first; empty or undefined is not a
   * state.
   */
  states(metric: string, key: Labels, current: string | undefined, now: number, base: readonly string[] = []): string[] {
    let byKey = this.seen.get(metric);
    if (!byKey) this.seen.set(metric, (byKey = new Map()));
    const k = keyOf(key);
    let states = byKey.get(k);
    if (!states) byKey.set(k, (states = new Map()));
    if (current) {
      // Re-inserted, so the map stays in order of last sight.
      states.delete(current);
      states.set(current, now);
    }
    let extra = 0;
    for (const s of states.keys()) if (!base.includes(s)) extra++;
    for (const [s, at] of states) {
      if (s === current) continue;
      const stale = now - at > FORGET_STATE_AFTER_SECONDS;
      const surplus = extra > MAX_EXTRA_STATES && !base.includes(s);
      if (stale || surplus) {
        states.delete(s);
        if (!base.includes(s)) extra--;
      }
    }
    const others = [...states.keys()].filter((s) => !base.includes(s)).sort();
    return [...base, ...others];
  }

  /**
   * What a restart keeps (--storage.path): the states seen per metric and entity, and when, so that
   * the first poll after a restart exports the same 0-valued states as one before it would have.
   */
  exportState(): StateMemoryState {
    const seen = [...this.seen].map(([metric, byKey]) => [metric, [...byKey].map(([key, states]) => [key, [...states]] as const)] as const);
    return { v: STATE_MEMORY_VERSION, seen };
  }

  /** Takes over what an earlier process remembered (exportState); false, and nothing taken, when `state` is not valid. */
  restoreState(state: unknown): boolean {
    const parsed = StateMemorySchema.safeParse(state);
    if (!parsed.success) return false;
    for (const [metric, keys] of parsed.data.seen) {
      this.seen.set(metric, new Map(keys.map(([key, states]) => [key, new Map(states)])));
    }
    return true;
  }

  /** Forget the entities of `metric` whose key is not among `live`. */
  retain(metric: string, live: readonly Labels[]): void {
    const byKey = this.seen.get(metric);
    if (!byKey) return;
    const keep = new Set(live.map(keyOf));
    for (const k of byKey.keys()) if (!keep.has(k)) byKey.delete(k);
  }
}

export const STATE_MEMORY_VERSION = 1;

/** StateMemory as kept on disk: metric → entity key → [state, last seen (unix seconds)], oldest first. */
export interface StateMemoryState {
  readonly v: typeof STATE_MEMORY_VERSION;
  readonly seen: ReadonlyArray<readonly [string, ReadonlyArray<readonly [string, ReadonlyArray<readonly [string, number]>]>]>;
}

const StateMemorySchema = z.object({
  v: z.literal(STATE_MEMORY_VERSION),
  seen: z.array(z.tuple([z.string(), z.array(z.tuple([z.string(), z.array(z.tuple([z.string(), z.number().finite()]))]))])),
});

function keyOf(labels: Labels): string {
  return JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
}
