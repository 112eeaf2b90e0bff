import { describe, expect, it } from 'vitest';
import { ChangeListSchema } from '../../src/api/schemas.js';
import { collectAssetChanges, collectUserChanges } from '../../src/collectors/changes.js';
import type { EndpointInputs } from '../../src/api/endpoints.js';
import type { CollectorContext } from '../../src/collectors/types.js';
import type { Sample } from '../../src/metrics/sample.js';
import { collect, context, find, fixture, iso, valueOf, validated } from './helpers.js';

function recordsOf(file: string) {
  const byId = fixture(`changes/${file}`) as Record<string, unknown>;
  return Object.entries(byId).map(([id, body]) => ({ id, value: validated(ChangeListSchema, body) }));
}
const assets = (file: string) => {
  const ctx = context();
  return { samples: collect(collectAssetChanges, recordsOf(file), ctx), ctx };
};

const LAPTOP = 'laptop "7" \\ ü';

describe('change-history collectors (asset_change, user_change)', () => {
  it.each<[string, string, string, string, number, number | undefined]>([
    ['string values, two entries, newest epoch', 'asset.json', 'srv-01', 'os', 2, 1714600000],
    ['number values', 'asset.json', 'srv-01', 'ram_gb', 1, 1714550000],
    ['list values; changeTimeUTC when the epoch is absent, epoch sent as text', 'asset.json', 'srv-01', 'ips', 2, iso('2024-05-02T00:00:00Z')],
    ['null/object values; epoch in milliseconds', 'asset.json', 'srv-01', 'owner', 1, 1714700000.123],
    ['id is the tracked name, not the entry id; hostile field and id unchanged', 'asset.json', LAPTOP, 'tag "x"\n', 1, 1714000000],
    ['no parseable time: count only', 'bad-times.json', 'srv-02', 'os', 2, undefined],
    ['epoch 0 is not a time; the other entry is newest', 'bad-times.json', 'srv-02', 'ram_gb', 2, 1714600000],
    ['no time at all: count only', 'bad-times.json', 'srv-02', 'cpu', 1, undefined],
  ])('%s', (_name, file, id, field, count, newest) => {
    const { samples } = assets(file);
    const labels = { type: 'asset', id, field };
    expect(valueOf(samples, 'cmdb_record_changes', labels)).toBe(count);
    expect(valueOf(samples, 'cmdb_record_last_change_timestamp_seconds', labels)).toBe(newest);
  });

  it('emits nothing for a tracked name with no change log (empty list)', () => {
    expect(find(assets('asset.json').samples, 'cmdb_record_changes', { id: 'never-changed' })).toEqual([]);
  });

  it('never labels by the entry id field', () => {
    expect(find(assets('asset.json').samples, 'cmdb_record_changes', { id: 'LAPTOP-7-NORMALISED' })).toEqual([]);
  });

  it.each<[string, (input: EndpointInputs['asset_change'], ctx: CollectorContext) => Sample[], string]>([
    ['asset_change', collectAssetChanges, 'asset'],
    ['user_change', collectUserChanges, 'user'],
  ])('%s sets type %s whatever the entries say', (_endpoint, collector, type) => {
    const samples = collect(collector, recordsOf('user.json'), context());
    expect(new Set(samples.map((s) => s.labels.type))).toEqual(new Set([type]));
    expect(valueOf(samples, 'cmdb_record_changes', { id: 'alice', field: 'department' })).toBe(2);
    expect(valueOf(samples, 'cmdb_record_last_change_timestamp_seconds', { id: 'alice', field: 'email' })).toBe(iso('2024-05-02T12:00:00Z'));
  });

  it('logs fields whose entries carry unreadable times at debug, once per field', () => {
    const { ctx } = assets('bad-times.json');
    expect(ctx.debugCalls.map((c) => [c.fields?.field, c.fields?.entries])).toEqual([
      ['os', 2],
      ['ram_gb', 1],
    ]);
  });

  it('keeps the first change list of a name given twice', () => {
    const ctx = context();
    const records = [...recordsOf('user.json'), { id: 'alice', value: [] }];
    const samples = collect(collectUserChanges, records, ctx);
    expect(valueOf(samples, 'cmdb_record_changes', { id: 'alice', field: 'department' })).toBe(2);
    expect(ctx.debugCalls).toHaveLength(1);
  });
});
