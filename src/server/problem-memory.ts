/**
 * Since when the status page has seen each problem of each stack, by the problem's key. Observed
 * after every poll (src/stacks.ts, when the store applies it) and at every render, so that a problem
 * first seen at or after its endpoint's newest poll appeared in that poll: it is new. A problem that
 * goes away is forgotten; if it comes back, it is new again.
 */
export class ProblemMemory {
  private readonly stacks = new Map<string, Map<string, number>>();
  /** What an earlier process had seen (--storage.path), until its restored series are all served. */
  private readonly restored = new Map<string, Map<string, number>>();
  /** Stacks whose restored series are all served: the next look is the last that reads `restored`. */
  private readonly served = new Set<string>();

  /** Records the keys `stack` has now (unix seconds `now`); returns when each was first seen. */
  observe(stack: string, keys: Iterable<string>, now: number): ReadonlyMap<string, number> {
    const before = this.stacks.get(stack);
    const after = new Map<string, number>();
    const earlier = this.restored.get(stack);
    for (const key of keys) after.set(key, before?.get(key) ?? earlier?.get(key) ?? now);
    this.stacks.set(stack, after);
    if (this.served.delete(stack)) this.restored.delete(stack);
    return after;
  }

  /** When each problem of `stack` was first seen, for a restart (--storage.path). */
  seenOf(stack: string): Array<[string, number]> {
    // What was restored and not looked at yet is still what is known.
    const out = new Map(this.restored.get(stack));
    for (const [key, since] of this.stacks.get(stack) ?? []) out.set(key, since);
    return [...out];
  }

  /** What an earlier process had seen of `stack`: a problem seen again before settled() keeps its since. */
  restore(stack: string, seen: Iterable<readonly [string, number]>): void {
    this.restored.set(stack, new Map(seen));
  }

  /** The restored series of `stack` are all served: after the next look, a problem from before the restart not seen by it has gone. */
  settled(stack: string): void {
    if (this.restored.has(stack)) this.served.add(stack);
  }

  forget(stack: string): void {
    this.stacks.delete(stack);
    this.restored.delete(stack);
    this.served.delete(stack);
  }
}
