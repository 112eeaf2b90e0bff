/**
 * What the status page remembers of each stack between two looks: what became of its recent
 * requests (src/cmdb/recent.ts: is the CMDB unreachable?) and since when it has seen each problem
 * (src/server/problem-memory.ts). Problems are observed after every poll the store applies, not only
 * when someone looks, so that "new" means new in the newest poll. Both outlive a stack's restart on
 * reload; since when each problem is seen outlives a restart of the process too (--storage.path,
 * the `status` part: docs/restarts.md). The recent requests are not kept: they are the last
 * minute's, and the new process's own requests say more.
 */
import { z } from 'zod';
import { RecentRequests, type RequestReport } from './cmdb/recent.js';
import type { LandingStack } from './server/landing-model.js';
import { ProblemMemory } from './server/problem-memory.js';
import { stackView, viewKeys } from './server/stack-view.js';
import type { SnapshotStore } from './store/snapshot-store.js';

export const STATUS_STATE_VERSION = 1;

/** What a restart keeps of the status page's memory of a stack: each problem's key and since when (unix seconds). */
const StatusStateSchema = z.object({
  v: z.literal(STATUS_STATE_VERSION),
  // A key is an alert's name and its subject (an endpoint, a connector, an Action id): no free text.
  seen: z.array(z.tuple([z.string().max(500), z.number().finite()])),
});
export type StatusState = z.infer<typeof StatusStateSchema>;

/** The problems seen in `state`, or undefined when it is not a valid status state of this version. */
export function statusStateFrom(state: unknown): Map<string, number> | undefined {
  const parsed = StatusStateSchema.safeParse(state);
  return parsed.success ? new Map(parsed.data.seen) : undefined;
}

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
    private readonly store: SnapshotStore,
    private readonly look: (stack: string) => void,
    private readonly now: () => number,
  ) {
    // The runner records a poll's status right after it hands the outcome to the store: look on the next turn.
    this.unsubscribe = store.onApplied((stack) => {
      this.polled.add(stack);
      this.pending ??= setImmediate(() => this.observePolled());
    });
  }

  /** Records the outcome of each request of `stack` that left (its endpoint, when it left). */
  recorder(stack: string): (report: RequestReport) => void {
    let recent = this.requests.get(stack);
    if (!recent) this.requests.set(stack, (recent = new RecentRequests()));
    const into = recent;
    return (report) => into.record(report, this.now());
  }

  /**
   * The stack's model with what the page remembers of it: its requests, and when it saw each
   * problem; and what the store serves of each endpoint: how many series, and whether they are
   * still the ones an earlier process kept (--storage.path).
   */
  remember(stack: LandingStack, at: number): LandingStack {
    const endpoints = stack.endpoints.map((e) => {
      const served = this.store.snapshot(stack.name, e.endpoint);
      return served === undefined ? e : { ...e, series: served.samples.length, ...(served.restored ? { restored: true } : {}) };
    });
    const withRequests = { ...stack, endpoints, requests: this.requests.get(stack.name)?.snapshot() };
    return { ...withRequests, seen: this.memory.observe(stack.name, viewKeys(stackView(withRequests, at)), at) };
  }

  /** What a restart keeps of `stack` (--storage.path). */
  exportState(stack: string): StatusState {
    return { v: STATUS_STATE_VERSION, seen: this.memory.seenOf(stack) };
  }

  /**
   * Since when an earlier process saw each problem of `stack`: a problem seen again keeps it. Looks
   * made while the restored series are still being applied (`settled`) do not forget the others;
   * once they are all served, a problem not there any more has gone.
   */
  restore(stack: string, seen: ReadonlyMap<string, number>, settled: Promise<void>): void {
    this.memory.restore(stack, seen);
    void settled.then(() => this.memory.settled(stack));
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
