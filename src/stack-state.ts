/**
 * A stack's starting point and its state as the parts of its state file (--storage.path,
 * src/persist/), and back: what a reload hands to a stack's next runtime (Carried), a restart keeps
 * too, each component in a small versioned form of its own, made and read next to the component.
 * docs/restarts.md tables the parts, and says why the exporter's own counters are none and the
 * budget's sends are in the request record (src/persist/send-record.ts);
 * test/persist/state-table.test.ts holds every stateful component of a running stack to the table.
 */
import type { BudgetState } from './cmdb/budget.js';
import { budgetFromSends, spentBudget } from './cmdb/budget.js';
import type { ClientCarry, CmdbClient } from './cmdb/client.js';
import { clientStateFrom } from './cmdb/client-state.js';
import type { PlanSeen, PollPlan } from './cmdb/plan.js';
import type { ConnectorHistoryReader, StackReaders } from './cmdb/readers/index.js';
import type { StackConfig } from './config/types.js';
import type { Logger } from './logger.js';
import type { RestoredState, SendsRead, Storage } from './persist/storage.js';
import type { ForbiddenState } from './scheduler/endpoint-runner.js';
import { pollerStateFrom } from './scheduler/poller-state.js';
import { queryLedgerStateFrom } from './scheduler/query-ledger.js';
import { runnerStateFrom, type RestoredEndpoint } from './scheduler/runner-state.js';
import type { StackPoller, StackPollerOptions } from './scheduler/stack-poller.js';
import { statusStateFrom } from './status-memory.js';
import type { SnapshotStore } from './store/snapshot-store.js';
import { storeStateFrom, type StoredEndpoint } from './store/store-state.js';

/** What a stack's runtime hands to the next one on reload, and what a restart restores: so that the stack goes on where it was. */
export interface Carried {
  /** What the request budget has spent (a reload does not refill it; a restart counts the request record's sends). */
  readonly budget?: BudgetState;
  /** Token and path spellings: what still holds (CmdbClient.handOver); on a restart the spellings and the pauses not ended. */
  readonly client?: ClientCarry;
  /** The connector history reader (held newest runs, last full scan, learned page size, a scan's pages), when it still holds (StackReaders.handOver). */
  readonly history?: ConnectorHistoryReader;
  /** What an earlier process kept of that reader (--storage.path): the readers go on from it. */
  readonly historyState?: unknown;
  /** 403 back-offs: waited out by the new runtime too, unless the service or the credentials changed. */
  readonly forbidden?: ForbiddenState;
  /** What the old runtime's client saw (connector pages, Actions, fetch rates): the new one plans with it. */
  readonly seen?: PlanSeen;
  /** What an earlier process kept (--storage.path): the runner's endpoints, the poller's caches, the saved queries' ledger. */
  readonly restored?: StackPollerOptions['restored'];
}

/** The components of a running stack whose state is kept. */
export interface StackComponents {
  readonly client: CmdbClient;
  readonly readers: StackReaders;
  readonly plan: PollPlan;
  readonly poller: StackPoller;
}

/** The parts of a running stack's state file. */
export function stackParts(name: string, stack: StackComponents, store: SnapshotStore): Record<string, unknown> {
  return {
    store: store.exportStack(name),
    runner: stack.poller.runner.exportState(),
    poller: stack.poller.exportState(),
    queries: stack.poller.queryState(),
    client: stack.client.exportState(stack.plan.seen()),
    history: stack.readers.historyState(),
  };
}

/**
 * What a stack starts from, resolved once before its runtime is built (src/stacks.ts hands each part
 * its own): what it carries over into its runtime, the series to serve again, and since when its
 * problems were seen.
 */
export interface Restored {
  readonly carried: Carried;
  readonly series?: readonly StoredEndpoint[];
  readonly problemsSeen?: ReadonlyMap<string, number>;
}

/**
 * The stack's budget from the request record: its sends of the last minute, or, when the record was
 * lost, a whole minute's worth as of now (no request for a minute, none over the rate).
 */
export function budgetOf(stack: StackConfig, sends: SendsRead | undefined, nowMs: number): BudgetState | undefined {
  if (sends === undefined) return undefined;
  return sends === 'unknown' ? spentBudget(stack.rateLimitPerMinute, nowMs) : budgetFromSends(sends, nowMs);
}

/**
 * `state` (taken from the storage) as the stack's starting point under its configuration now, or
 * the name of the first part that does not validate (the stack then starts cold). State older than
 * the restore bound is served but not continued from (see REFRESH_AFTER_SECONDS).
 */
export function restoredStack(stack: StackConfig, state: RestoredState): Restored | { invalid: string } {
  const { parts } = state.doc;
  const series = parts.store === undefined ? [] : storeStateFrom(parts.store);
  if (!series) return { invalid: 'store' };
  const runner = parts.runner === undefined ? new Map<never, never>() : runnerStateFrom(parts.runner);
  if (!runner) return { invalid: 'runner' };
  const poller = parts.poller === undefined ? undefined : pollerStateFrom(parts.poller, state.refresh);
  if (parts.poller !== undefined && !poller) return { invalid: 'poller' };
  const queries = parts.queries === undefined ? undefined : queryLedgerStateFrom(parts.queries);
  if (parts.queries !== undefined && !queries) return { invalid: 'queries' };
  const client = parts.client === undefined ? undefined : clientStateFrom(parts.client);
  if (parts.client !== undefined && !client) return { invalid: 'client' };
  const problemsSeen = parts.status === undefined ? undefined : statusStateFrom(parts.status);
  if (parts.status !== undefined && !problemsSeen) return { invalid: 'status' };
  // The readers go on from the history's part (a history read in another time zone is not restored:
  // its next read is a full scan, as after a reload); past the restore bound it is read again.
  const historyState = state.refresh ? undefined : parts.history;
  // Past the restore bound every query is due again (a day may have passed): its ledger is not continued from.
  const restored = {
    runner: state.refresh ? withoutBackOffs(runner) : runner,
    ...(poller ? { poller } : {}),
    ...(queries && !state.refresh ? { queries } : {}),
  };
  const carried: Carried = {
    restored,
    ...(historyState === undefined ? {} : { historyState }),
    ...(client ? { client: { spellings: client.spellings, ...(client.pauses.length > 0 && !state.refresh ? { pauses: client.pauses } : {}) }, seen: client.seen } : {}),
  };
  // Past the restore bound the exporter was away too long to say a problem went on meanwhile.
  return { carried, series, ...(problemsSeen && problemsSeen.size > 0 && !state.refresh ? { problemsSeen } : {}) };
}

/** State past the restore bound: 403 back-offs end, the endpoints are asked again at once. */
function withoutBackOffs(runner: ReadonlyMap<string, RestoredEndpoint>): Map<RestoredEndpoint['endpoint'], RestoredEndpoint> {
  return new Map([...runner.values()].map((e) => [e.endpoint, e.forbidden ? { ...e, forbidden: undefined } : e]));
}

/**
 * Where `stack` starts from when state is kept, asked of the storage once (Storage.restore): its
 * restored runtime and series (unless there is none, it is not the stack's, or it does not
 * validate: a cold start, logged by the storage), and its budget from the request record.
 */
export function startingPoint(storage: Storage, stack: StackConfig, logger: Logger, nowMs: number): Restored | undefined {
  const answer = storage.restore<Restored>(stack, (state) => restoredStack(stack, state));
  const ok = answer.kind === 'restored' ? answer.value : undefined;
  if (answer.kind === 'restored') {
    const series = answer.value.series?.reduce((n, e) => n + e.samples.length, 0) ?? 0;
    const what = answer.state.refresh ? 'served, but older than an hour: everything is read again' : 'polls go on from it';
    logger.info({ stack: stack.name, series, ageSeconds: Math.round(answer.state.ageSeconds) }, `state kept at the last stop restored: ${what}`);
  }
  const budget = budgetOf(stack, answer.sends, nowMs);
  if (!ok && !budget) return undefined;
  const { series, problemsSeen } = ok ?? {};
  return { carried: { ...ok?.carried, ...(budget ? { budget } : {}) }, ...(series ? { series } : {}), ...(problemsSeen ? { problemsSeen } : {}) };
}
