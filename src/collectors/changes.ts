/**
 * Change-history area (…/data/metadata/cmdb/{asset,user}/change?id=<name>), for the names listed in
 * the configuration. Old and new values are never read: they may be anything and never become labels.
 */
import type { ChangeEntry } from '../api/schemas.js';
import { parseTimestamp } from '../time.js';
import type { Collector, CollectorContext } from './types.js';
import { SampleSet, firstOfEach } from './emit.js';

type RecordType = 'asset' | 'user';

interface FieldChanges {
  count: number;
  newest: number | undefined;
  /** Entries whose time was present but could not be read. */
  unreadable: number;
}

function changeTime(entry: ChangeEntry, timeZone: string): number | undefined {
  return parseTimestamp(entry.changeTimeEpoch, timeZone) ?? parseTimestamp(entry.changeTimeUTC, timeZone);
}

function byField(entries: readonly ChangeEntry[], timeZone: string): Map<string, FieldChanges> {
  const fields = new Map<string, FieldChanges>();
  for (const entry of entries) {
    let f = fields.get(entry.field);
    if (!f) fields.set(entry.field, (f = { count: 0, newest: undefined, unreadable: 0 }));
    f.count += 1;
    const t = changeTime(entry, timeZone);
    if (t === undefined) {
      if (entry.changeTimeEpoch != null || (entry.changeTimeUTC != null && entry.changeTimeUTC !== '')) f.unreadable += 1;
    } else if (f.newest === undefined || t > f.newest) f.newest = t;
  }
  return fields;
}

function collectRecord(type: RecordType, id: string, entries: readonly ChangeEntry[], out: SampleSet, ctx: CollectorContext): void {
  for (const [field, f] of byField(entries, ctx.timeZone)) {
    // `id` is the tracked name that was asked for, not the entry's own id field.
    const labels = { type, id, field };
    out.gauge('cmdb_record_changes', labels, f.count);
    out.gauge('cmdb_record_last_change_timestamp_seconds', labels, f.newest);
    if (f.unreadable > 0) {
      ctx.debug('change entries with a time that is not a time; they do not count as newest', { ...labels, entries: f.unreadable });
    }
  }
}

function changeCollector(type: RecordType): Collector<'asset_change' | 'user_change'> {
  return (records, ctx) => {
    const out = new SampleSet(ctx);
    const once = firstOfEach(records, (r) => r.id, ctx, 'tracked name given twice; later change list ignored', (id) => ({ type, id }));
    for (const { id, value } of once) collectRecord(type, id, value, out, ctx);
    return out.finish([]);
  };
}

export const collectAssetChanges: Collector<'asset_change'> = changeCollector('asset');
export const collectUserChanges: Collector<'user_change'> = changeCollector('user');
