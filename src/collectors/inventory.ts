/** Inventory area: asset and user counts (GET …/system/metrics/data). */
import type { Collector } from './types.js';
import { SampleSet } from './emit.js';

export const collectMetricsData: Collector<'metrics_data'> = (record, ctx) => {
  const out = new SampleSet(ctx);
  out.gauge('cmdb_assets', {}, record.assetCount);
  out.gauge('cmdb_users', {}, record.userCount);
  // The averages are optional in the body; absent means no sample, never 0.
  out.gauge('cmdb_assets_avg_30d', {}, record.avg30DaysAssetCount ?? undefined);
  out.gauge('cmdb_users_avg_30d', {}, record.avg30DaysUserCount ?? undefined);
  return out.finish([]);
};
