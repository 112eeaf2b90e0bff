/**
 * What a backfill has no samples for, said per stack and range: consecutive days whose counts
 * failed the same way as one range of days, the Actions whose jobs or the names whose change
 * history could not be read as one line per endpoint and reason, the rest (the connector history,
 * the ingestion run list, the Action list) over the whole range.
 */
import type { MissingUnit } from './unit-reader.js';

const DAY = 86_400;
const SHOWN = 5;

const day = (text: string) => Date.parse(`${text}T00:00:00Z`) / 1000;
const iso = (s: number) => new Date(s * 1000).toISOString().replace(':00.000Z', 'Z');

/** The range a stack writes, as the summary names it. */
export function rangeText(ranges: ReadonlyArray<readonly [number, number]>): string {
  return ranges.map(([a, b]) => `${iso(a)} to ${iso(b)}`).join(', ');
}

function dayRanges(days: readonly string[]): string[] {
  const sorted = [...new Set(days)].sort();
  const out: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && day(sorted[j + 1] as string) - day(sorted[j] as string) === DAY) j++;
    const n = j - i + 1;
    out.push(n === 1 ? (sorted[i] as string) : `${sorted[i]} to ${sorted[j]} (${n} days)`);
    i = j + 1;
  }
  return out;
}

/** One line per kind of unit and reason, for stack `stack` over `range`. */
export function describeMissing(stack: string, missing: readonly MissingUnit[], range: string): string[] {
  const groups = new Map<string, MissingUnit[]>();
  for (const m of missing) {
    const kind = m.key.slice(0, m.key.indexOf('/') + 1 || m.key.length);
    const k = `${kind}\u0000${m.reason}`;
    groups.set(k, [...(groups.get(k) ?? []), m]);
  }
  return [...groups].map(([k, units]) => {
    const [kind, reason] = k.split('\u0000') as [string, string];
    const ids = units.map((u) => u.key.slice(kind.length));
    let what: string;
    if (kind === 'counts/') what = `counts (cmdb_assets, cmdb_users) of ${dayRanges(ids).join(', ')}`;
    else if (kind === 'action-jobs/') what = `jobs of ${units.length} Action${units.length === 1 ? '' : 's'} (${shown(ids)}; their cmdb_action_* series), ${range}`;
    else if (kind.endsWith('-changes/')) what = `change history of ${units.length} ${kind.slice(0, -'-changes/'.length)} name${units.length === 1 ? '' : 's'} (${shown(ids)}), ${range}`;
    else what = `${units.map((u) => u.what).join(', ')}, ${range}`;
    return `stack ${stack}: ${what}: ${reason}`;
  });
}

function shown(ids: readonly string[]): string {
  const head = ids.slice(0, SHOWN).join(', ');
  return ids.length > SHOWN ? `${head} and ${ids.length - SHOWN} more` : head;
}
