/**
 * Since when the status page has seen each problem of each stack, by the problem's key. Observed
 * after every poll (src/stacks.ts, when the store applies it) and at every render, so that a problem
 * first seen at or after its endpoint's newest poll appeared in that poll: it is new. A problem that
 * goes away is forgotten; if it comes back, it is new again.
 */
export class ProblemMemory {
  private readonly stacks = new Map<string, Map<string, number>>();

  /** Records the keys `stack` has now (unix seconds `now`); returns when each was first seen. */
  observe(stack: string, keys: Iterable<string>, now: number): ReadonlyMap<string, number> {
    const before = this.stacks.get(stack);
    const after = new Map<string, number>();
    for (const key of keys) after.set(key, before?.get(key) ?? now);
    this.stacks.set(stack, after);
    return after;
  }

  forget(stack: string): void {
    this.stacks.delete(stack);
  }
}
