/**
 * Reading a stack's history for a backfill, through the daemon's own readers and client (retries,
 * token, budget, the connector reader's page sizes) paced at `backfillRequestsPerMinute`: one
 * `data?date=` per day of the range, one scan of every connector run, the ingestion run list, the
 * Action list and every Action's jobs, and the change history of the tracked names. Nothing here
 * reads the CMDB but through src/cmdb/readers. An endpoint that fails is logged once and left out;
 * the others go on.
 */
import { runKey, runTime } from '../api/connector-runs.js';
import type { Action, ActionJob, ChangeEntry, ConnectorRun, IngestionRun, MetricsRecord } from '../api/schemas.js';
import type { StackReaders } from '../cmdb/readers/index.js';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import { dayKeys } from './plan.js';

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
  /** Endpoints that failed: the first error and how many requests of it failed. */
  readonly failures: Array<{ endpoint: string; error: string; count: number }>;
}

export interface ReadProgress {
  /** One request-level step done (a day, a page, an Action, a name). */
  step(what: string): void;
  /** The answers say there is more to read (further pages, the Actions' job lists). */
  grow(requests: number): void;
}

/**
 * Keeps per connector key the newest row at or before `from` and every row in (from, to]: what a
 * replay of the range needs, whatever the length of the history before it. A row met twice (rows
 * written during the scan push the older ones onto the next page) is kept once.
 */
export class RangeRows {
  private readonly before = new Map<string, { run: ConnectorRun; time: number }>();
  private readonly inside: ConnectorRun[] = [];
  private readonly seenInside = new Set<string>();
  rowsRead = 0;

  constructor(
    private readonly from: number,
    private readonly to: number,
    private readonly timeZone: string,
  ) {}

  add(rows: readonly ConnectorRun[]): void {
    for (const run of rows) {
      this.rowsRead += 1;
      const t = runTime(run, this.timeZone);
      // A row without a time cannot be placed on the range.
      if (t === undefined || t > this.to) continue;
      const key = runKey(run);
      if (t > this.from) {
        const id = `${key}@${t}`;
        if (!this.seenInside.has(id)) this.inside.push(run);
        this.seenInside.add(id);
        continue;
      }
      const best = this.before.get(key);
      if (!best || t >= best.time) this.before.set(key, { run, time: t });
    }
  }

  rows(): ConnectorRun[] {
    return [...[...this.before.values()].map((b) => b.run), ...this.inside];
  }
}

export interface ReadOptions {
  readonly stack: StackConfig;
  readonly readers: StackReaders;
  readonly logger: Logger;
  readonly from: number;
  readonly to: number;
  readonly progress?: ReadProgress;
  readonly signal?: AbortSignal;
}

export async function readHistory(opts: ReadOptions): Promise<StackHistory> {
  const { stack, readers, logger, from, to, signal } = opts;
  const ctx = { signal };
  const progress = opts.progress ?? { step: () => undefined, grow: () => undefined };
  const failures: StackHistory['failures'] = [];
  const attempt = async <T>(endpoint: string, what: string, read: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await read();
    } catch (err) {
      if (signal?.aborted) throw err;
      const error = (err as Error).message;
      const known = failures.find((f) => f.endpoint === endpoint);
      if (known) {
        // Logged once per endpoint: a failing endpoint fails for every day, Action or name alike.
        known.count += 1;
      } else {
        failures.push({ endpoint, error, count: 1 });
        logger.error({ endpoint, err: error }, `${what} could not be read; what it feeds is left out of the backfill (check the endpoint and run the backfill again)`);
      }
      return undefined;
    } finally {
      progress.step(what);
    }
  };
  const disabled = new Set<string>(stack.disabledEndpoints);

  const days = new Map<number, MetricsRecord>();
  if (!disabled.has('metrics_data')) {
    for (const day of dayKeys(from, to)) {
      const record = await attempt('metrics_data', `counts of ${day.text}`, () => readers.countsOn(day.text, ctx));
      if (record) days.set(day.start, record);
      // One day failing loses that day only; the whole endpoint failing every day is reported once.
    }
  }

  let connectorRows: ConnectorRun[] | undefined;
  if (!disabled.has('connector')) {
    const kept = new RangeRows(from, to, stack.timezone);
    let seen = 0;
    const walked = await attempt('connector', 'connector run history', () =>
      readers.everyConnectorRun((rows) => {
        kept.add(rows);
        // The first page is the planned request; each further one was not known in advance.
        if (++seen > 1) {
          progress.grow(1);
          progress.step('connector page');
        }
      }, ctx),
    );
    if (walked !== undefined) connectorRows = kept.rows();
  }

  const ingestionRuns = disabled.has('data_ingestion') ? undefined : await attempt('data_ingestion', 'ingestion run list', () => readers.get('data_ingestion', undefined, ctx));

  const actionJobs = new Map<string, ActionJob[]>();
  const actions = disabled.has('actions') ? undefined : await attempt('actions', 'Action list', () => readers.get('actions', undefined, ctx));
  if (actions && !disabled.has('action_jobs')) {
    const ids = new Set(actions.map((a) => a.actionId));
    progress.grow(ids.size);
    for (const id of ids) {
      const jobs = await attempt('action_jobs', `jobs of Action ${id}`, () => readers.actionJobs(id, ctx));
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
      const entries = await attempt(endpoint, `change history of ${type} ${name}`, () => readers.changes(endpoint, name, ctx));
      if (entries) changes[type].set(name, entries);
    }
  }
  return { days, connectorRows, ingestionRuns, actions, actionJobs, changes, failures };
}
