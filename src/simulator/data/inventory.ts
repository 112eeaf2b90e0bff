/** Inventory counts (spec 2.2) and the license (spec 2.3). */
import { Rng } from '../random.js';
import { seedTime } from '../day-offset.js';
import { DAY_MS, isoDay } from '../format.js';
import { CUSTOMER_NAME } from '../text.js';
import type { Inventory, LicenseRow, MetricsRow } from './types.js';

export function initialInventory(seed: number): Inventory {
  const rng = Rng.of(seed, 'inventory');
  const assetCount = rng.int(1_000, 50_000);
  const userCount = rng.int(100, 5_000);
  return {
    assetCount,
    userCount,
    avgAssetCount: assetCount * (0.98 + rng.next() * 0.03),
    avgUserCount: userCount * (0.98 + rng.next() * 0.03),
  };
}

export function initialLicense(nowMs: number): LicenseRow {
  return { licenseType: 'FULL', expireDate: isoDay(nowMs + 365 * DAY_MS), customerName: CUSTOMER_NAME };
}

export function currentMetrics(inv: Inventory, nowMs: number): MetricsRow {
  return {
    assetCount: inv.assetCount,
    userCount: inv.userCount,
    date: isoDay(nowMs),
    avg30DaysAssetCount: Math.round(inv.avgAssetCount),
    avg30DaysUserCount: Math.round(inv.avgUserCount),
  };
}

/** The record of a past day: a little smaller the further back, with day-to-day noise. */
export function pastMetrics(seed: number, inv: Inventory, dayMs: number, todayMs: number): MetricsRow {
  const rng = Rng.of(seed, 'metrics-day', seedTime(dayMs));
  const back = Math.max(0, (todayMs - dayMs) / DAY_MS);
  const factor = (1 - Math.min(back, 365) * 0.0005) * (0.995 + rng.next() * 0.01);
  return {
    assetCount: Math.round(inv.avgAssetCount * factor),
    userCount: Math.round(inv.avgUserCount * factor),
    date: isoDay(dayMs),
    avg30DaysAssetCount: Math.round(inv.avgAssetCount * (factor + 0.002)),
    avg30DaysUserCount: Math.round(inv.avgUserCount * (factor + 0.002)),
  };
}

/** One minute of drift: counts move a little; the 30-day averages follow slowly. */
export function driftMinute(inv: Inventory, rng: Rng): void {
  inv.assetCount = Math.max(0, inv.assetCount + rng.int(-3, 5));
  inv.userCount = Math.max(0, inv.userCount + rng.int(-1, 2));
  inv.avgAssetCount += (inv.assetCount - inv.avgAssetCount) / (30 * 1440);
  inv.avgUserCount += (inv.userCount - inv.avgUserCount) / (30 * 1440);
}
