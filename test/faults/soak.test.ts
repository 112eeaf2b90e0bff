/**
 * A 60-second soak (scripts/soak.ts) in `npm run test:faults`: the daemon against a simulator that
 * replaces connectors and Actions and invents status texts every 5 s. After a warm-up in which the
 * state sets reach their bound (~100 s), the last third of the run must hold its series within 5 % of
 * the first third (a count: a correct exporter holds them exactly). The run's length and its sampling
 * pace are the scenario. Its resident memory is a figure of the machine, measured in
 * `npm run bench:soak`, not asserted here.
 */
import { describe, expect, it } from 'vitest';
import { formatSoak, runSoak, SERIES_LIMIT } from '../../scripts/soak.js';

describe('soak, 60 s', () => {
  it('keeps the series flat under entity and status-text churn', async () => {
    const result = await runSoak({ seconds: 60 });
    console.log(formatSoak(result));
    expect(result.samples.length).toBeGreaterThanOrEqual(9);
    expect(result.churnSteps).toBeGreaterThanOrEqual(10);
    expect(result.seriesRatio, 'series, last third / first third').toBeLessThanOrEqual(SERIES_LIMIT);
  }, 300_000);
});
