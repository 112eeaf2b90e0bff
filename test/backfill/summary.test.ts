import { describe, expect, it } from 'vitest';
import { describeMissing, rangeText } from '../../src/backfill/summary.js';
import type { MissingUnit } from '../../src/backfill/unit-reader.js';

const day = (d: string, reason = 'GET /CMDB/v2/system/metrics/data: 503 Service Unavailable'): MissingUnit => ({ key: `counts/${d}`, endpoint: 'metrics_data', what: `counts of ${d}`, reason });
const range = rangeText([[Date.parse('2026-11-01T00:00:00Z') / 1000, Date.parse('2026-11-10T18:00:00Z') / 1000]]);

describe('what is missing, per stack and range', () => {
  it('joins consecutive days that failed alike into ranges', () => {
    const lines = describeMissing('prod', [day('2026-11-03'), day('2026-11-04'), day('2026-11-05'), day('2026-11-08'), day('2026-11-09', 'timeout')], range);
    expect(lines).toEqual([
      'stack prod: counts (cmdb_assets, cmdb_users) of 2026-11-03 to 2026-11-05 (3 days), 2026-11-08: GET /CMDB/v2/system/metrics/data: 503 Service Unavailable',
      'stack prod: counts (cmdb_assets, cmdb_users) of 2026-11-09: timeout',
    ]);
  });

  it('names Actions and tracked names by endpoint and reason, and whole-range units with the range', () => {
    const jobs = Array.from({ length: 7 }, (_, i): MissingUnit => ({ key: `action-jobs/a${i}`, endpoint: 'action_jobs', what: `jobs of Action a${i}`, reason: 'not read: credentials rejected' }));
    const lines = describeMissing('prod', [{ key: 'connector-history', endpoint: 'connector', what: 'connector run history', reason: 'not read: credentials rejected' }, ...jobs, { key: 'asset-changes/web 01', endpoint: 'asset_change', what: 'change history of asset web 01', reason: '404' }], range);
    expect(lines).toEqual([
      'stack prod: connector run history, 2026-11-01T00:00Z to 2026-11-10T18:00Z: not read: credentials rejected',
      'stack prod: jobs of 7 Actions (a0, a1, a2, a3, a4 and 2 more; their cmdb_action_* series), 2026-11-01T00:00Z to 2026-11-10T18:00Z: not read: credentials rejected',
      'stack prod: change history of 1 asset name (web 01), 2026-11-01T00:00Z to 2026-11-10T18:00Z: 404',
    ]);
  });
});
