import type {
  Action,
  ActionJob,
  ChangeEntry,
  ConnectorRun,
  IngestionRun,
  IngestionTask,
  LicenseRecord,
  MetricsRecord,
  NextRun,
} from '../api/schemas.js';
import type { DataEndpoint } from '../api/endpoints.js';
import type { Sample } from '../metrics/sample.js';
import type { StateMemory } from './state-memory.js';

export interface CollectorContext {
  /** Unix time in seconds of the poll (a fixed clock in tests). */
  readonly now: number;
  /** IANA zone for times sent without one (`yyyy-mm-dd HH:mm:ss`); the stack's `timezone`, default UTC. */
  readonly timeZone: string;
  /** State-set memory of this stack. */
  readonly states: StateMemory;
  /** Debug log for a value that could not be parsed (its sample is dropped). */
  readonly debug: (message: string, fields?: Record<string, unknown>) => void;
}

/** What each endpoint's collector receives: validated response bodies, after paging. */
export interface EndpointInputs {
  metrics_data: MetricsRecord;
  license: LicenseRecord;
  /** Every row of every page of the run history, in the order received. */
  connector: readonly ConnectorRun[];
  data_ingestion: readonly IngestionRun[];
  data_ingestion_next: NextRun;
  /** The task list of the newest run, or null when there is no run at all. */
  data_ingestion_detail: { readonly runId: string; readonly tasks: readonly IngestionTask[] } | null;
  /** Every Action of every page. */
  actions: readonly Action[];
  /** The job lists of the Actions currently listed. */
  action_jobs: ReadonlyArray<{ readonly actionId: string; readonly jobs: readonly ActionJob[] }>;
  /** One entry per tracked asset name; a 404 (no change log) arrives as an empty list. */
  asset_change: ReadonlyArray<{ readonly id: string; readonly entries: readonly ChangeEntry[] }>;
  user_change: ReadonlyArray<{ readonly id: string; readonly entries: readonly ChangeEntry[] }>;
}

/** A pure mapping from one endpoint's validated response to samples. No I/O, no timers, no globals. */
export type Collector<E extends DataEndpoint> = (input: EndpointInputs[E], ctx: CollectorContext) => Sample[];
export type CollectorTable = { readonly [E in DataEndpoint]: Collector<E> };
