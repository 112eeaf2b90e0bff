/**
 * A 60-second soak (scripts/soak.ts) in `npm run test:faults`: the daemon against a simulator that
 * replaces connectors and Actions and invents status texts every 5 s. After a warm-up in which the
 * state sets reach their bound (~100 s), the last third of the run must hold its series within 5 % and
 * its RSS within 10 % of the first third.
 */
import { describe, expect, it } from 'vitest';
import { formatSoak, RSS_LIMIT, runSoak, SERIES_LIMIT } from '../../scripts/soak.js';

describe('soak, 60 s', () => {
  it('keeps series and RSS flat under entity and status-text churn', async () => {
    const result = await runSoak({ seconds: 60 });
    console.log(formatSoak(result));
    expect(result.samples.length).toBeGreaterThanOrEqual(9);
    expect(result.churnSteps).toBeGreaterThanOrEqual(10);
    expect(result.seriesRatio, 'series, last third / first third').toBeLessThanOrEqual(SERIES_LIMIT);
    expect(result.rssRatio, 'RSS, last third / first third').toBeLessThanOrEqual(RSS_LIMIT);
  }, 300_000);
});
