/**
 * Saved inventory queries (POST /CMDB/v2/data/cmdb, GET /CMDB/v2/data/metadata/{asset,user}). The
 * input is what each query's last run left (QueryOutcome): a count with the rebuild it belongs
 * to, or a refusal or failure, which has no count: never the count of an earlier run.
 */
import type { Collector } from './types.js';
import { SampleSet } from './emit.js';

export const collectQueries: Collector<'data_query'> = (outcomes, ctx) => {
  const out = new SampleSet(ctx);
  for (const { id, value } of outcomes) {
    const key = { query: id };
    const counted = value.state === 'ok';
    out.gauge('cmdb_query_records', key, counted ? value.records : undefined);
    out.gauge('cmdb_query_data_as_of_timestamp_seconds', key, counted ? value.rebuiltAt : undefined);
    out.gauge('cmdb_query_last_run_success', key, counted ? 1 : 0);
    out.gauge('cmdb_query_refused', key, value.state === 'refused' ? 1 : 0);
    out.gauge('cmdb_query_last_run_timestamp_seconds', key, value.ranAt);
    out.gauge('cmdb_query_previous_records', key, counted ? value.previousRecords : undefined);
    out.gauge('cmdb_query_alert_rise_ratio', key, value.alertRiseRatio);
  }
  return out.finish([]);
};

export const collectFieldMetadata: Collector<'data_metadata'> = (tables, ctx) => {
  const out = new SampleSet(ctx);
  for (const { id, value } of tables) out.gauge('cmdb_query_fields', { table: id }, value.length);
  return out.finish([]);
};
