/**
 * The connector run history as the list endpoint serves it: one row per run, in a seeded shuffled
 * order (not grouped, newest not first). Each (bridge_name, profile) keeps its newest `keep` runs; a
 * new run takes the slot of the one it pushes out, so pages stay put while time moves.
 */
import type { Rng } from '../random.js';
import { slotOf } from './connector-row.js';
import type { ConnectorRow } from './types.js';

export type SortDirection = 'asc' | 'desc';

export const SORTABLE_FIELDS: ReadonlySet<string> = new Set<keyof ConnectorRow>([
  '_utc',
  '_time',
  'bridge_name',
  'display_name',
  'profile',
  'platform',
  'version',
  'status',
  'start_time',
  'end_time',
  'duration_minutes',
  'input_records',
  'output_records',
]);

export function profileName(row: ConnectorRow): string {
  if (row.profile === null) return '';
  return typeof row.profile === 'string' ? row.profile : row.profile.profile_name;
}

function runKey(row: ConnectorRow): string {
  return slotOf(row) ?? `${row.bridge_name}\u0000${profileName(row)}`;
}

function sortValue(row: ConnectorRow, field: string): string | number {
  if (field === 'profile') return profileName(row);
  const v = row[field as keyof ConnectorRow];
  return typeof v === 'number' || typeof v === 'string' ? v : '';
}

function compare(a: string | number, b: string | number): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  // Code-unit order, not locale order: the same bytes on every machine.
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export class ConnectorHistory {
  private rows: ConnectorRow[] = [];
  /** Per run key, oldest first. */
  private byKey = new Map<string, ConnectorRow[]>();
  private position = new Map<ConnectorRow, number>();
  private sortCache = new Map<string, ConnectorRow[]>();

  constructor(private readonly keep: number) {}

  get size(): number {
    return this.rows.length;
  }

  /** Rows in served order. */
  all(): readonly ConnectorRow[] {
    return this.rows;
  }

  /** Runs of one connector, any profile, oldest first per profile. */
  runsOf(bridgeName: string): ConnectorRow[] {
    return this.rows.filter((r) => r.bridge_name === bridgeName);
  }

  /** Initial history, already in served order. */
  load(rows: ConnectorRow[]): void {
    this.rows = [];
    this.byKey.clear();
    for (const row of rows) this.insert(row, this.rows.length);
    this.changed();
  }

  /** Add the newest run of its key, pushing out the oldest beyond `keep`. */
  add(row: ConnectorRow, rng: Rng): void {
    const runs = this.byKey.get(runKey(row)) ?? [];
    const oldest = runs[0];
    if (oldest && runs.length >= this.keep) {
      const at = this.position.get(oldest) as number;
      runs.shift();
      this.position.delete(oldest);
      this.rows[at] = row;
      this.position.set(row, at);
      this.track(row);
    } else {
      this.insert(row, rng.int(0, this.rows.length));
      this.reindex();
    }
    this.changed();
  }

  removeBridge(bridgeName: string): void {
    this.rows = this.rows.filter((r) => r.bridge_name !== bridgeName);
    for (const key of [...this.byKey.keys()]) {
      if (key.startsWith(`${bridgeName}\u0000`)) this.byKey.delete(key);
    }
    this.reindex();
    this.changed();
  }

  /** Rows ordered by one field (stable: ties keep served order). */
  sorted(field: string, direction: SortDirection): readonly ConnectorRow[] {
    const cacheKey = `${field},${direction}`;
    let rows = this.sortCache.get(cacheKey);
    if (!rows) {
      const sign = direction === 'desc' ? -1 : 1;
      rows = [...this.rows].sort((a, b) => sign * compare(sortValue(a, field), sortValue(b, field)));
      this.sortCache.set(cacheKey, rows);
    }
    return rows;
  }

  private insert(row: ConnectorRow, at: number): void {
    this.rows.splice(at, 0, row);
    this.position.set(row, at);
    this.track(row);
  }

  private track(row: ConnectorRow): void {
    const key = runKey(row);
    const runs = this.byKey.get(key) ?? [];
    runs.push(row);
    runs.sort((a, b) => a._time - b._time);
    this.byKey.set(key, runs);
  }

  private reindex(): void {
    this.position.clear();
    this.rows.forEach((row, i) => this.position.set(row, i));
  }

  private changed(): void {
    this.sortCache.clear();
  }
}
