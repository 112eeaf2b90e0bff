/**
 * CMDB_SIM_DAY_OFFSET: the simulator draws its time-keyed randomness as N days later would, while
 * the times it serves stay where they are. Read once per process, so each case loads the modules
 * afresh under the variable it sets.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseDayOffset } from '../../src/simulator/day-offset.js';

const DAY = 86_400_000;
const TODAY = Date.parse('2026-11-28T00:00:00.000Z');
const SEED = 42;

async function simulatorDataWith(offset: string | undefined) {
  vi.resetModules();
  if (offset === undefined) vi.unstubAllEnvs();
  else vi.stubEnv('CMDB_SIM_DAY_OFFSET', offset);
  const inventory = await import('../../src/simulator/data/inventory.js');
  const ingestion = await import('../../src/simulator/data/ingestion.js');
  return { inventory, ingestion };
}

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('CMDB_SIM_DAY_OFFSET', () => {
  it('takes whole days and refuses anything else, naming the variable', () => {
    expect([undefined, '', '30', '-7', '60'].map(parseDayOffset)).toEqual([0, 0, 30, -7, 60]);
    for (const bad of ['1.5', 'thirty', '4000']) expect(() => parseDayOffset(bad)).toThrow(/^CMDB_SIM_DAY_OFFSET: must be a whole number of days/);
  });

  it("serves today's dates with the counts and runs of the days N days later", async () => {
    const plain = await simulatorDataWith(undefined);
    const inv = plain.inventory.initialInventory(SEED);
    const later = (back: number) => plain.inventory.pastMetrics(SEED, inv, TODAY + (30 - back) * DAY, TODAY + 30 * DAY);
    const laterRun = (back: number) => plain.ingestion.scheduledRun(SEED, TODAY + (30 - back) * DAY);
    const today = (back: number) => plain.inventory.pastMetrics(SEED, inv, TODAY - back * DAY, TODAY);

    const shifted = await simulatorDataWith('30');
    const days = [1, 2, 3, 5, 8, 13];
    for (const back of days) {
      const got = shifted.inventory.pastMetrics(SEED, inv, TODAY - back * DAY, TODAY);
      expect(got, `${back} days back`).toEqual({ ...later(back), date: today(back).date });
      const run = shifted.ingestion.scheduledRun(SEED, TODAY - back * DAY);
      const other = laterRun(back);
      expect([run.plannedOutcome, (run.plannedEndUs ?? 0) - run.startUs], `ingestion run ${back} days back`).toEqual([other.plannedOutcome, (other.plannedEndUs ?? 0) - other.startUs]);
      expect(run.startUs - other.startUs).toBe(-30 * DAY * 1000);
    }
    // And not what the machine's date gives.
    expect(days.map((b) => shifted.inventory.pastMetrics(SEED, inv, TODAY - b * DAY, TODAY).assetCount)).not.toEqual(days.map((b) => today(b).assetCount));
  });
});
