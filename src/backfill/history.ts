/**
 * Reading a stack's history for a backfill through the daemon's own readers and client, paced at
 * `backfillRequestsPerMinute` (docs/backfill.md, "How it works"). Each day's counts, the connector
 * history, the ingestion run list, the Action list, each Action's jobs and each tracked name's
 * changes is a unit of unit-reader.ts: kept in --out once read, listed as missing when it fails.
 */
import type { Action, ActionJob, ChangeEntry, ConnectorRun, IngestionRun, MetricsRecord } from '../api/schemas.js';
import type { StackReaders } from '../cmdb/readers/index.js';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import type { StackAnswers } from './answers.js';
import { CONNECTOR_UNIT, readConnectorRuns } from './connector-scan.js';
import type { StopReason } from './fail-fast.js';
import type { ProgressPart } from './progress.js';
import { UnitReader, type MissingUnit } from './unit-reader.js';

export interface StackHistory {
  /** Counts per UTC day, by the day's start in unix seconds. */
  readonly days: Map<number, MetricsRecord>;
  /** Connector rows that matter to the range: per key the newest before it and every row in it. */
  readonly connectorRows: ConnectorRun[] | undefined;
  readonly ingestionRuns: IngestionRun[] | undefined;
  readonly actions: Action[] | undefined;
  /** Job lists by Action id; an Action whose jobs could not be read is absent. */
  readonly actionJobs: Map<string, ActionJob[]>;
  readonly changes: { readonly asset: Map<string, ChangeEntry[]>; readonly user: Map<string, ChangeEntry[]> };
  /** Units without an answer, in the order they were due: they have no samples. */
  readonly missing: readonly MissingUnit[];
  /** Why the stack's reading stopped early, if it did. */
  readonly stopped?: StopReason;
}

export interface ReadOptions {
  readonly stack: StackConfig;
  readonly readers: StackReaders;
  readonly logger: Logger;
  readonly from: number;
  readonly to: number;
  readonly progress: ProgressPart;
  readonly signal: AbortSignal;
  /** The answers of earlier runs, where this run's go too. */
  readonly answers: StackAnswers;
  /** The days whose counts are read. */
  readonly days: ReadonlyArray<{ start: number; text: string }>;
}

export async function readHistory(opts: ReadOptions): Promise<StackHistory> {
  const { stack, readers, logger, from, to, signal, progress } = opts;
  const ctx = { signal };
  const reader = new UnitReader({ stack: stack.name, answers: opts.answers, logger, progress, signal });
  const disabled = new Set<string>(stack.disabledEndpoints);

  const days = new Map<number, MetricsRecord>();
  if (!disabled.has('metrics_data')) {
    for (const day of opts.days) {
      const record = await reader.unit(`counts/${day.text}`, 'metrics_data', `counts of ${day.text}`, () => readers.countsOn(day.text, ctx));
      if (record) days.set(day.start, record);
    }
  }

  let connectorRows: ConnectorRun[] | undefined;
  if (!disabled.has('connector')) {
    connectorRows = await reader.unit(CONNECTOR_UNIT, 'connector', 'connector run history', () =>
      readConnectorRuns({
        readers,
        answers: opts.answers,
        from,
        to,
        timeZone: stack.timezone,
        signal,
        // The first page is the planned request; each further one was not known in advance.
        furtherPage: () => {
          progress.grow(1);
          progress.step();
        },
      }),
    );
  }

  const ingestionRuns = disabled.has('data_ingestion') ? undefined : await reader.unit('ingestion-runs', 'data_ingestion', 'ingestion run list', () => readers.get('data_ingestion', undefined, ctx));

  const actionJobs = new Map<string, ActionJob[]>();
  const actions = disabled.has('actions') ? undefined : await reader.unit('actions', 'actions', 'Action list', () => readers.get('actions', undefined, ctx));
  if (actions && !disabled.has('action_jobs')) {
    const ids = new Set(actions.map((a) => a.actionId));
    progress.grow(ids.size);
    for (const id of ids) {
      const jobs = await reader.unit(`action-jobs/${id}`, 'action_jobs', `jobs of Action ${id}`, () => readers.actionJobs(id, ctx));
      if (jobs) actionJobs.set(id, jobs);
    }
  }

  const changes = { asset: new Map<string, ChangeEntry[]>(), user: new Map<string, ChangeEntry[]>() };
  for (const [type, endpoint, names] of [
    ['asset', 'asset_change', stack.track.assets],
    ['user', 'user_change', stack.track.users],
  ] as const) {
    if (disabled.has(endpoint)) continue;
    for (const name of names) {
      const entries = await reader.unit(`${type}-changes/${name}`, endpoint, `change history of ${type} ${name}`, () => readers.changes(endpoint, name, ctx));
      if (entries) changes[type].set(name, entries);
    }
  }
  return { days, connectorRows, ingestionRuns, actions, actionJobs, changes, missing: reader.missing, stopped: reader.stopped };
}
