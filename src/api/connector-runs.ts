/**
 * What a row of the connector run history is and when it was written: shared by the client (which
 * keeps the newest row per key while reading pages) and the collectors (which map those rows).
 * How the real service fills this endpoint (rows per run, unsorted pages, merger and Action rows):
 * docs/cmdb-api-notes.md, "The connector run history".
 */
import { parseTimestamp } from '../time.js';
import type { ConnectorRun } from './schemas.js';

/**
 * Rows of the endpoint that are not connector runs: `ML-ENGINE` rows are the internal asset and
 * user mergers, `action` rows are outbound Scheduled Action runs. Compared case-insensitively.
 */
export type RowKind = 'connector' | 'merger' | 'action';

export function rowKind(run: Pick<ConnectorRun, 'platform'>): RowKind {
  const platform = (run.platform ?? '').trim().toUpperCase();
  if (platform === 'ML-ENGINE') return 'merger';
  if (platform === 'ACTION') return 'action';
  return 'connector';
}

export type Health = 'ok' | 'warning' | 'error' | 'unknown';

/** metrics.md: SUCCESS in any case → ok, WARNING in any case → warning, other text → error, none → unknown. */
export function healthOf(status: string | null | undefined): Health {
  const s = (status ?? '').trim().toUpperCase();
  if (s === '') return 'unknown';
  if (s === 'SUCCESS') return 'ok';
  if (s === 'WARNING') return 'warning';
  return 'error';
}

/**
 * The internal mergers by their exact names, and the table each rebuilds. Matched exactly on
 * purpose (as the only other public client does): a renamed merger is a platform change to
 * notice, not to guess at; its runs still count for the stack's "data as of".
 */
export const MERGER_TABLES: Readonly<Record<string, 'asset' | 'user'>> = {
  'Lucidum Asset Merger': 'asset',
  'Lucidum User Merger': 'user',
};

/** When the data was rebuilt, as the merger rows of the run history tell it (unix seconds). */
export interface Rebuilds {
  /** The newest merger run that did not fail, of any merger: the stack's "data as of". */
  readonly newest?: number;
  /** Per table: its own merger's newest run that did not fail; the stack's newest when the history has no merger of that name. */
  readonly asset?: number;
  readonly user?: number;
}

/**
 * A rebuild is a merger run that did not fail: Success or Warning (a demo stack's merger rows are
 * all Warning, and its counts match them); Error, Warning&Error, FAILED or an empty status is none.
 */
export function rebuildsOf(runs: readonly ConnectorRun[], timeZone: string): Rebuilds {
  let newest: number | undefined;
  const byTable: Partial<Record<'asset' | 'user', number>> = {};
  const seen = new Set<string>();
  for (const run of runs) {
    if (rowKind(run) !== 'merger') continue;
    const table = MERGER_TABLES[run.bridge_name];
    if (table !== undefined) seen.add(table);
    const health = healthOf(run.status);
    const time = health === 'ok' || health === 'warning' ? runTime(run, timeZone) : undefined;
    if (time === undefined) continue;
    newest = Math.max(newest ?? time, time);
    if (table !== undefined) byTable[table] = Math.max(byTable[table] ?? time, time);
  }
  const forTable = (table: 'asset' | 'user') => (seen.has(table) ? byTable[table] : newest);
  const asset = forTable('asset');
  const user = forTable('user');
  return { ...(newest === undefined ? {} : { newest }), ...(asset === undefined ? {} : { asset }), ...(user === undefined ? {} : { user }) };
}

/** profile.profile_name for an object, the text itself for a string, "" for null/absent (merger rows). */
export function profileName(run: Pick<ConnectorRun, 'profile'>): string {
  const p = run.profile;
  if (typeof p === 'string') return p;
  return p?.profile_name ?? '';
}

/** When the row was written: `_time`, else `_utc`, else end_time, else start_time. */
export function runTime(run: ConnectorRun, timeZone: string): number | undefined {
  return (
    parseTimestamp(run._time) ??
    parseTimestamp(run._utc, timeZone) ??
    parseTimestamp(run.end_time, timeZone) ??
    parseTimestamp(run.start_time, timeZone)
  );
}

/** The key one series set is kept for: (bridge_name, profile name). */
export function runKey(run: ConnectorRun): string {
  return JSON.stringify([run.bridge_name, profileName(run)]);
}

/**
 * Keeps the newest row per key (greatest runTime; a tie goes to the row seen later). Feed it rows
 * in any order, in as many batches as pages arrive; memory grows with the keys, not the rows.
 */
export class NewestRuns {
  private readonly newest = new Map<string, { run: ConnectorRun; time: number }>();

  constructor(private readonly timeZone: string) {}

  /** True when the row replaced or added a key's newest row with a different row. */
  add(run: ConnectorRun): boolean {
    const key = runKey(run);
    const time = runTime(run, this.timeZone) ?? -Infinity;
    const best = this.newest.get(key);
    if (best && time < best.time) return false;
    this.newest.set(key, { run, time });
    // The same row read twice (an incremental read sees the newest rows again) is no change.
    return !best || (best.run !== run && JSON.stringify(best.run) !== JSON.stringify(run));
  }

  addAll(runs: Iterable<ConnectorRun>): this {
    for (const run of runs) this.add(run);
    return this;
  }

  /** The greatest finite runTime held, or undefined when none has one. */
  newestTime(): number | undefined {
    let max: number | undefined;
    for (const { time } of this.newest.values()) if (Number.isFinite(time) && (max === undefined || time > max)) max = time;
    return max;
  }

  /** Per key, the time of its newest row (finite times only): what an incremental read already knows. */
  times(): Array<[string, number]> {
    const out: Array<[string, number]> = [];
    for (const [key, { time }] of this.newest) if (Number.isFinite(time)) out.push([key, time]);
    return out;
  }

  /** The kept rows, in order of first appearance of their key. */
  runs(): ConnectorRun[] {
    return [...this.newest.values()].map((v) => v.run);
  }
}

/** The newest row per (bridge_name, profile name), in order of first appearance; ties → later row. */
export function newestRuns(runs: readonly ConnectorRun[], timeZone: string): ConnectorRun[] {
  return new NewestRuns(timeZone).addAll(runs).runs();
}

/**
 * A row as it may be kept on disk (--storage.path): what the reader and the collectors read of it,
 * and none of the free text the service writes into it. Event messages keep their number and level
 * (what cmdb_connector_event_messages counts) but not their texts, where a password or key can
 * stand; the profile is already reduced to its names by the schema.
 */
export function runForDisk(run: ConnectorRun): ConnectorRun {
  const messages = run.event_messages;
  if (messages == null) return run;
  if (typeof messages === 'string') return { ...run, event_messages: messages.trim() === '' ? '' : '-' };
  const counted = messages.flatMap((m): unknown[] => {
    if (m === null || m === undefined) return [];
    if (typeof m === 'object' && !Array.isArray(m)) return [Object.fromEntries(Object.keys(m).map((level) => [level, '']))];
    return [0];
  });
  return { ...run, event_messages: counted };
}
