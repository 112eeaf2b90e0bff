/**
 * The store's updates, applied one after the other in the order they arrived. A small update
 * applies at once when nothing waits before it; a large one is a generator that yields between
 * slices of its work, run one slice per turn of the event loop, so that scrapes (which serve what
 * is applied, never waiting for this queue) are answered between its slices.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** An update waiting for its turn: a generator that yields between slices of its work. */
export type Update = Generator<void, void>;

interface Queued {
  readonly update: Update;
  readonly stack: string;
  readonly applied: () => void;
}

export class UpdateQueue {
  /** Updates not yet applied, in arrival order; the first one may be half done. */
  private readonly queue: Queued[] = [];
  /** Updates in the queue per stack (see settledOf). */
  private readonly pendingOf = new Map<string, number>();
  private draining: Promise<void> | null = null;

  /** Queues `update` of `stack`; resolves once it is applied. `small`: it may run to its end at once. */
  enqueue(stack: string, update: Update, small: boolean): Promise<void> {
    if (small && this.queue.length === 0) {
      runToEnd(update);
      return Promise.resolve();
    }
    this.pendingOf.set(stack, (this.pendingOf.get(stack) ?? 0) + 1);
    const done = new Promise<void>((resolve) => this.queue.push({ update, stack, applied: resolve }));
    this.draining ??= this.drain();
    return done;
  }

  /** Resolves once every update that arrived so far has been applied. */
  settled(): Promise<void> {
    return this.draining ?? Promise.resolve();
  }

  /**
   * Resolves once every update of `stack` that arrived so far has been applied: a stack's reader
   * does not wait for the other stacks' polls (with hundreds of stacks some update is nearly always
   * being prepared).
   */
  async settledOf(stack: string): Promise<void> {
    while (this.pendingOf.has(stack) && this.draining) await this.draining;
  }

  /** Applies every pending update now (synchronous callers that change what the updates apply to). */
  flush(): void {
    while (this.queue.length > 0) this.finish(this.queue.shift() as Queued, true);
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const first = this.queue[0] as Queued;
        if (first.update.next().done) {
          if (this.queue[0] === first) this.queue.shift();
          this.finish(first, false);
        } else await nextTurn();
      }
    } finally {
      this.draining = null;
    }
  }

  private finish(q: Queued, run: boolean): void {
    try {
      if (run) runToEnd(q.update);
    } finally {
      const n = (this.pendingOf.get(q.stack) ?? 1) - 1;
      if (n > 0) this.pendingOf.set(q.stack, n);
      else this.pendingOf.delete(q.stack);
      q.applied();
    }
  }
}

function runToEnd(update: Update): void {
  while (!update.next().done);
}
