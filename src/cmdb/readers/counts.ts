/**
 * The reader of the asset and user counts (`…/metrics/data`): today's, which the daemon polls, and
 * one past day's (`?date=yyyy-mm-dd`), which a backfill asks once per day of its range.
 */
import type { RequestContext } from '../../api/request-context.js';
import type { MetricsRecord } from '../../api/schemas.js';
import type { CmdbClient } from '../client.js';
import { readRecord } from './record.js';

/** `day`: `yyyy-mm-dd`, or undefined for the counts now. */
export function readCounts(client: CmdbClient, day: string | undefined, ctx: RequestContext): Promise<MetricsRecord> {
  return readRecord(client, 'metrics_data', undefined, ctx, day === undefined ? undefined : `date=${encodeURIComponent(day)}`);
}
