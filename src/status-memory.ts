/**
 * What the status page remembers of each stack between two looks: what became of its recent
 * requests (src/cmdb/recent.ts: is the CMDB unreachable?) and since when it has seen each problem
 * (src/server/problem-memory.ts: since when, and what is new). The problems are observed after every
 * poll the store applies, not only when someone looks, so that "new" means new in the newest poll.
 * Both outlive a stack's restart on reload; a stack removed from the configuration is forgotten.
 */
import { RecentRequests } from './cmdb/recent.js';
import type { RequestOutcome } from './errors.js';
import type { LandingStack } from './server/landing.js';
import { ProblemMemory } from './server/problem-memory.js';
import { stackView, viewKeys } from './server/stack-view.js';
import type { SnapshotStore } from './store/snapshot-store.js';

export class StatusMemory {
  private readonly requests = new Map<string, RecentRequests>();
  private readonly memory = new ProblemMemory();
  private readonly polled = new Set<string>();
  private pending: NodeJS.Immediate | undefined;
  private readonly unsubscribe: () => void;

  /**
   * `look(name)`: builds the stack's status page model as a render does, which remembers what it
   * finds (Stacks.landing calls remember()); `now`: unix seconds.
   */
  constructor(
    store: SnapshotStore,
    private readonly look: (stack: string) => void,
    private readonly now: () => number,
  ) {
    // The runner records a poll's status right after it hands the outcome to the store: look on the next turn.
    this.unsubscribe = store.onApplied((stack) => {
      this.polled.add(stack);
      this.pending ??= setImmediate(() => this.observePolled());
    });
  }

  /** Records the outcome of each request of `stack` that left. */
  recorder(stack: string): (outcome: RequestOutcome) => void {
    let recent = this.requests.get(stack);
    if (!recent) this.requests.set(stack, (recent = new RecentRequests()));
    const into = recent;
    return (outcome) => into.record(outcome, this.now());
  }

  /** The stack's model with what the page remembers of it: its requests, and when it saw each problem. */
  remember(stack: LandingStack, at: number): LandingStack {
    const withRequests = { ...stack, requests: this.requests.get(stack.name)?.snapshot() };
    return { ...withRequests, seen: this.memory.observe(stack.name, viewKeys(stackView(withRequests, at)), at) };
  }

  forget(stack: string): void {
    this.requests.delete(stack);
    this.memory.forget(stack);
  }

  close(): void {
    this.unsubscribe();
    if (this.pending) clearImmediate(this.pending);
    this.pending = undefined;
  }

  private observePolled(): void {
    this.pending = undefined;
    for (const name of this.polled) this.look(name);
    this.polled.clear();
  }
}
