/** The next ingestion run and the schedule (…/data-ingestion/next). */
import { parseTimestamp } from '../time.js';
import type { Collector } from './types.js';
import { SampleSet, label, preview } from './emit.js';

/** next_run_at holds a text instead of a time while a run is in progress (as the API documents): expected, not worth a log line. */
const IN_PROGRESS_TEXT = /in\s+progress/i;

export const collectIngestionNext: Collector<'data_ingestion_next'> = (next, ctx) => {
  const out = new SampleSet(ctx);
  const at = next.next_run_at;
  if (at != null && at !== '') {
    const t = parseTimestamp(at, ctx.timeZone);
    if (t === undefined && !(typeof at === 'string' && IN_PROGRESS_TEXT.test(at))) {
      ctx.debug('next_run_at is not a time; sample dropped', { field: 'next_run_at', value: preview(at) });
    }
    out.gauge('cmdb_ingestion_next_run_timestamp_seconds', {}, t);
  }
  if (next.schedule_interval_value != null || next.schedule_interval_type != null) {
    out.info('cmdb_ingestion_schedule_info', {
      schedule: label(next.schedule_interval_value),
      schedule_type: label(next.schedule_interval_type),
    });
  }
  return out.finish([]);
};
