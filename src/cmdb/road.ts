/**
 * One stack's road to its CMDB, assembled in one place for every caller (the daemon's stacks, the
 * backfill, tests and benchmarks): the client (token, spellings, the request pipeline), the readers
 * over it, and with `enabled` the poll plan that observes them.
 */
import type { DataEndpoint } from '../api/endpoints.js';
import { CmdbClient, type CmdbClientOptions } from './client.js';
import { PollPlan, type PlanSeen } from './plan.js';
import type { PageReducer } from './page-reducer.js';
import { StackReaders, type ConnectorHistoryReader } from './readers/index.js';

/** The client's options (a backfill gives its pace, requestsPerMinute), and the readers' and the plan's. */
export interface RoadOptions extends CmdbClientOptions {
  /** The connector history reader of the stack's previous runtime (see StackReaders.handOver). */
  readonly history?: ConnectorHistoryReader;
  /** Else what an earlier process kept of it (--storage.path): see StackReadersOptions. */
  readonly historyState?: unknown;
  readonly pageReducer?: PageReducer;
  /** The endpoints the stack polls: with them, its poll plan is made and published. */
  readonly enabled?: readonly DataEndpoint[];
  /** What the stack's previous runtime saw, for the poll plan. */
  readonly seen?: PlanSeen;
}

export interface Road {
  readonly client: CmdbClient;
  readonly readers: StackReaders;
  readonly plan: PollPlan | undefined;
  /** Closes the readers' worker, the client's dispatcher and stops the plan observing. */
  close(): Promise<void>;
}

export function openRoad(opts: RoadOptions): Road {
  const { history, historyState, pageReducer, enabled, seen, ...clientOptions } = opts;
  const client = new CmdbClient(clientOptions);
  const readers = new StackReaders({ client, instruments: opts.instruments, logger: opts.logger, ...(history ? { history } : {}), ...(historyState === undefined ? {} : { historyState }), ...(pageReducer ? { pageReducer } : {}) });
  const plan = enabled
    ? new PollPlan({ stack: opts.stack, enabled, ...(seen ? { seen } : {}), events: client.events, instruments: opts.instruments, logger: opts.logger, now: () => client.clock.now() })
    : undefined;
  return {
    client,
    readers,
    plan,
    close: async () => {
      plan?.close();
      await Promise.all([client.close(), readers.close()]);
    },
  };
}
