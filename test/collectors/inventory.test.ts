import { describe, expect, it } from 'vitest';
import { MetricsRecordSchema } from '../../src/api/schemas.js';
import { collectMetricsData } from '../../src/collectors/inventory.js';
import { collect, context, fixture, validated, valueOf } from './helpers.js';

const run = (file: string) => {
  const ctx = context();
  const samples = collect(collectMetricsData, validated(MetricsRecordSchema, fixture(`inventory/${file}`)), ctx);
  return { samples, ctx };
};

describe('inventory collector (metrics_data)', () => {
  it.each<[string, string, Record<string, number | undefined>]>([
    ['a full record gives counts and averages', 'metrics-data.json', { cmdb_assets: 15234, cmdb_users: 812, cmdb_assets_avg_30d: 15001, cmdb_users_avg_30d: 799 }],
    ['absent averages give no average samples, and a count of 0 is kept', 'metrics-data-no-averages.json', { cmdb_assets: 0, cmdb_users: 3, cmdb_assets_avg_30d: undefined, cmdb_users_avg_30d: undefined }],
    ['numbers sent as text inside a data envelope are read; a null average is absent', 'metrics-data-enveloped.json', { cmdb_assets: 15234, cmdb_users: 812, cmdb_assets_avg_30d: 15001.5, cmdb_users_avg_30d: undefined }],
    ['averages of the wrong type are dropped, counts stay', 'metrics-data-wrong-average.json', { cmdb_assets: 10, cmdb_users: 2, cmdb_assets_avg_30d: undefined, cmdb_users_avg_30d: undefined }],
  ])('%s', (_name, file, expected) => {
    const { samples } = run(file);
    for (const [name, value] of Object.entries(expected)) expect(valueOf(samples, name), name).toBe(value);
    expect(samples).toHaveLength(Object.values(expected).filter((v) => v !== undefined).length);
  });

  it('emits only label-less samples (the store adds stack)', () => {
    const { samples } = run('metrics-data.json');
    for (const s of samples) expect(s.labels).toEqual({});
  });
});
