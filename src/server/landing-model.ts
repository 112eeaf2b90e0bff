/**
 * What the status page is made from: per stack its endpoints' poll status, what is not polled, its
 * samples, pauses, scan, queries, and what the page remembers of it (src/status-memory.ts). Types
 * only: the page (landing.ts), its attention section (attention-html.ts) and the stack's view
 * (stack-view.ts) read it, so that none of them imports another for its shapes.
 */
import type { DataEndpoint } from '../api/endpoints.js';
import type { Sample } from '../metrics/sample.js';
import type { EndpointStatus } from '../scheduler/endpoint-runner.js';
import type { QueryStatus } from '../scheduler/query-poller.js';
import type { PauseShown } from './attention.js';
import type { RecentRequests } from './cause.js';

export interface LandingEndpoint extends EndpointStatus {
  /**
   * Its series are served from the state an earlier process kept (--storage.path) until its first
   * poll since the restart succeeds: they are as old as lastSuccessAt says.
   */
  readonly restored?: boolean;
  /** How many series the exporter serves of it now. */
  readonly series?: number;
  /** The poll interval of the endpoint's group, in seconds. */
  readonly intervalSeconds?: number;
  /** When the group's next scheduled poll is due (unix seconds); undefined without a scheduler. */
  readonly nextPollAt?: number;
  /** The last successful poll (unix seconds). */
  readonly lastSuccessAt?: number;
  /** While a poll of the endpoint's group runs: when it started (unix seconds). */
  readonly pollingSince?: number;
}

/** An endpoint that is not polled, and why. */
export interface SkippedEndpoint {
  readonly endpoint: DataEndpoint;
  /** disabled: listed in disabledEndpoints; untracked: a change history without tracked names; unqueried: no saved queries. */
  readonly reason: 'disabled' | 'untracked' | 'unqueried';
}

/** Where the connector history's scan stands (what the client reports; the same shape as its ScanProgress). */
export interface LandingScanProgress {
  readonly kind: 'full' | 'incremental';
  /** Unix seconds. */
  readonly startedAt: number;
  readonly pagesRead: number;
  readonly pagesTotal?: number;
  readonly bytes: number;
  readonly pageSize: number;
  readonly endedAt?: number;
}

export interface LandingStack {
  readonly name: string;
  readonly baseUrl: string;
  readonly unauthorized: boolean;
  /** The pauses in force: the stack's (every request waits) and each endpoint group's. */
  readonly pauses?: readonly PauseShown[];
  readonly endpoints: readonly LandingEndpoint[];
  readonly skipped?: readonly SkippedEndpoint[];
  /** The stack's current samples (what /metrics serves of it). */
  readonly samples?: readonly Sample[];
  /** Listed Actions whose jobs are due but not fetched yet (paced); undefined when Action jobs are not polled. */
  readonly jobBacklog?: number;
  /** The stack's poll plan: requests an hour it asks of the CMDB against its budget. */
  readonly demand?: { readonly perHour: number; readonly budgetPerHour: number; readonly ratio: number };
  /** The connector history's scan in progress (or the last one) and until when incremental reads are off. */
  readonly connectorScan?: { readonly progress?: LandingScanProgress; readonly incrementalOffUntil?: number };
  /** The saved queries: state, count, rebuild, last and next run, and why one is refused or failing. */
  readonly queries?: readonly QueryStatus[];
  /** Added after start (a reload, stacksDir) and its first polls still running: it does not hold readiness back. */
  readonly joining?: boolean;
  /** What became of the stack's recent requests: whether the CMDB is unreachable (src/server/cause.ts). */
  readonly requests?: RecentRequests;
  /** Problem key → when the page first saw it (src/server/problem-memory.ts): since when, and what is new. */
  readonly seen?: ReadonlyMap<string, number>;
}

export interface LandingModel {
  readonly version: string;
  readonly ready: boolean;
  /** Unix seconds. */
  readonly now: number;
  readonly stacks: readonly LandingStack[];
  /** The newest reload, when it was rejected (the previous configuration stays in force); cleared by a good one. */
  readonly rejectedReload?: { readonly at: number; readonly message: string };
  /** Base of the "what to do" links (runbookBaseUrl); default the runbooks this exporter serves (docs/alerts). */
  readonly runbookBase?: string;
}

