/**
 * Everything one stack polls, group by group: a dispatcher over small pollers, each of which owns
 * its endpoints' requests and its part of the state a restart keeps.
 *
 * | group                   | poller                                | state part (PollerState)  |
 * |-------------------------|---------------------------------------|---------------------------|
 * | inventory, license      | once-poller.ts (asked once per poll)  | none                      |
 * | connectors              | scan-poller.ts (descriptor `scan`)    | none (the reader's own)   |
 * | ingestion               | ingestion-poller.ts                   | detailOf                  |
 * | actions, actionJobs     | action-jobs-poller.ts                 | actions, jobs             |
 * | changes                 | change-poller.ts                      | changes                   |
 * | queries                 | query-poller.ts                       | its ledger: the `queries` part of the state file (queryState) |
 *
 * The collectors' remembered states (Mapper.states) are the stack's, shared by every poller.
 * The hand-off to the saved queries is one seam: the scan poller tells what each read of the
 * connector history says of the rebuilds (`rebuilds`), and whether its first read is still to
 * come (`rebuildPending`); the query poller decides from that when to count. When the queries
 * group runs is the scheduler's (scheduler.ts).
 */
import { GROUPS, descriptor, scanned, type CmdbApi, type DataEndpoint, type GroupName } from '../api/endpoints.js';
import { realClock } from '../cmdb/clock.js';
import type { PollSettings } from '../config/endpoints.js';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import type { SnapshotStore } from '../store/snapshot-store.js';
import { ActionJobsPoller } from './action-jobs-poller.js';
import { ChangePoller } from './change-poller.js';
import { pollDeadline, type PollDeadline } from './deadline.js';
import { EndpointRunner, type ForbiddenState } from './endpoint-runner.js';
import { IngestionPoller } from './ingestion-poller.js';
import { Mapper, type GroupPoller, type PollerParts } from './mapping.js';
import { oncePoller, type OnceEndpoint } from './once-poller.js';
import type { Sleep } from './pacer.js';
import { POLLER_STATE_VERSION, type PollerState } from './poller-state.js';
import { QueryPoller, type QueryStatus } from './query-poller.js';
import type { QueryLedgerState } from './query-ledger.js';
import type { RestoredEndpoint } from './runner-state.js';
import { readThroughGet, ScanPoller } from './scan-poller.js';

export interface StackPollerOptions {
  readonly stack: StackConfig;
  /** What the stack polls (pollSettings(stack), computed once by whoever holds the configuration). */
  readonly settings: PollSettings;
  readonly api: CmdbApi;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readonly scrubber: SecretScrubber;
  /** Unix seconds. */
  readonly now: () => number;
  /** Waits between paced job fetches; default real timers. */
  readonly sleep?: Sleep;
  /**
   * Pace the job fetches and end a job poll by its share of the interval (scheduled polls, the
   * default). Off for --once: one round that fetches every due Action at the budget's pace.
   */
  readonly paced?: boolean;
  /** Told each slot of the queries' pacer a count takes (ms): RoadEvents.paced. */
  readonly onCountSlot?: (slotAt: number) => void;
  /** Told the job-fetch backlog after the Action list and each slice of a job poll (cmdb_action_jobs_backlog). */
  readonly onBacklog?: (actions: number) => void;
  /** The 403 back-offs of the stack's previous runtime (a reload with the same service and credentials). */
  readonly forbidden?: ForbiddenState;
  /** What an earlier process knew (--storage.path): the runner's endpoints, and the poller's caches. */
  readonly restored?: { readonly runner?: ReadonlyMap<DataEndpoint, RestoredEndpoint>; readonly poller?: PollerState; readonly queries?: QueryLedgerState };
}

export class StackPoller {
  readonly name: string;
  readonly runner: EndpointRunner;
  private readonly mapper: Mapper;
  private readonly scan: ScanPoller;
  private readonly ingestion: IngestionPoller;
  private readonly actions: ActionJobsPoller;
  private readonly changes: ChangePoller;
  private readonly queries: QueryPoller;
  private readonly pollers: Readonly<Record<GroupName, GroupPoller>>;

  constructor(private opts: StackPollerOptions) {
    this.name = opts.stack.name;
    this.runner = new EndpointRunner({ ...opts, endpoints: opts.settings.enabled, restored: opts.restored?.runner });
    const stack = () => this.opts.stack;
    this.mapper = new Mapper({ stack, logger: opts.logger, now: opts.now });
    const parts: PollerParts = { stack, api: opts.api, runner: this.runner, mapper: this.mapper, logger: opts.logger, now: opts.now };
    const sleep = opts.sleep ?? ((ms, signal) => realClock.sleep(ms, signal));
    const paced = opts.paced !== false;
    this.queries = new QueryPoller({
      ...opts,
      stack,
      reader: opts.api.queries,
      runner: this.runner,
      sleep,
      paced,
      rebuildPending: () => this.runner.enabled('connector') && this.runner.pending().includes('connector'),
      map: (endpoint, input) => this.mapper.map(endpoint, input),
      ...(opts.restored?.queries ? { ledger: opts.restored.queries } : {}),
    });
    this.scan = new ScanPoller(parts, { reading: opts.api.scan ?? readThroughGet(opts.api), rebuilds: (seen) => this.queries.noteRebuilds(seen) });
    this.ingestion = new IngestionPoller(parts);
    this.actions = new ActionJobsPoller(parts, { sleep, paced, ...(opts.onBacklog ? { onBacklog: opts.onBacklog } : {}) });
    this.changes = new ChangePoller(parts);
    this.pollers = {
      inventory: this.onceOrScan(parts, 'inventory'),
      license: this.onceOrScan(parts, 'license'),
      connectors: this.onceOrScan(parts, 'connectors'),
      ingestion: this.ingestion,
      actions: this.actions.list,
      actionJobs: this.actions.jobPoll,
      changes: this.changes,
      queries: this.queries,
    };
    if (opts.restored?.poller) this.restore(opts.restored.poller);
  }

  get stack(): StackConfig {
    return this.opts.stack;
  }

  /** What a restart keeps of the saved queries (the `queries` part, src/stack-state.ts). */
  queryState(): QueryLedgerState {
    return this.queries.exportState();
  }

  /** Each saved query's state, for the status page. */
  queryStatus(): QueryStatus[] {
    return this.runner.enabled('data_query') ? this.queries.status() : [];
  }

  /** What a restart keeps (--storage.path): each poller's part, and the remembered states (poller-state.ts). */
  exportState(): PollerState {
    return {
      v: POLLER_STATE_VERSION,
      ...this.actions.exportState(),
      ...this.changes.exportState(),
      ...this.ingestion.exportState(),
      states: this.mapper.states.exportState(),
    };
  }

  private restore(state: PollerState): void {
    this.actions.restore(state);
    this.changes.restore(state);
    this.ingestion.restore(state);
    // Not valid: the states are forgotten, as at a cold start (0-valued states come back as they are seen).
    this.mapper.states.restoreState(state.states);
  }

  /**
   * Endpoints that keep the stack from being ready: those asked once per poll (the lists) until
   * their first answer. Per-id endpoints (Action jobs, change history) fill in after that, paced
   * within the budget; the status page shows them pending and the job backlog.
   */
  pending(): DataEndpoint[] {
    return this.runner.pending().filter((e) => descriptor(e).fanOut !== 'each');
  }

  /** Listed Actions whose jobs are due but not fetched yet (the status page and cmdb_action_jobs_backlog). */
  jobBacklog(): number {
    return this.actions.backlog();
  }

  /**
   * A reload changed settings that keep the stack's road (src/stacks.ts): later polls run under
   * `stack` (intervals, pace, tracked names) and `settings` (endpoints polled), the polls in flight
   * finish under the settings they started with.
   */
  reconfigure(stack: StackConfig, settings: PollSettings): void {
    const before = this.opts.stack;
    this.opts = { ...this.opts, stack, settings };
    this.runner.reconfigure(stack, settings.enabled);
    this.actions.reconfigure(before);
    // The saved queries keep what they counted, but for queries that changed or went.
    this.queries.reconfigure(before, stack);
  }

  /** Groups with at least one enabled endpoint. */
  groups(): readonly GroupName[] {
    return this.opts.settings.groups;
  }

  /**
   * Poll one group through its poller. A poll takes at most the group's interval (deadline.ts), a
   * scan while it moves. `stop` aborts when the stack is being stopped: requests in flight finish
   * (`outer` bounds them), but no new paced work starts.
   */
  async poll(group: GroupName, outer?: AbortSignal, stop?: AbortSignal): Promise<void> {
    const interval = this.opts.stack.intervals[group];
    const poller = this.pollers[group];
    const deadline: PollDeadline = poller === this.scan ? this.scan.deadline(outer, interval) : pollDeadline(outer, interval);
    try {
      await poller.poll(deadline.context, stop);
    } finally {
      deadline.dispose();
    }
  }

  /**
   * True when the group's last poll left one of its endpoints failing, or not polled because the
   * one it depends on failed: the scheduler retries it on the group's back-off. A 403 is not
   * counted: it waits on its own long back-off.
   */
  failing(group: GroupName): boolean {
    const endpoints: ReadonlySet<DataEndpoint> = new Set(GROUPS[group]);
    return this.runner.status().some((s) => endpoints.has(s.endpoint) && (s.state === 'failing' || s.state === 'blocked'));
  }

  /** A group of endpoints asked once per poll: the scan poller for one whose descriptor declares it read as a scan. */
  private onceOrScan(parts: PollerParts, group: 'inventory' | 'license' | 'connectors'): GroupPoller {
    const endpoints = GROUPS[group];
    return endpoints.some(scanned) ? this.scan : oncePoller(parts, endpoints as readonly OnceEndpoint[]);
  }
}
