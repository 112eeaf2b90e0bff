/**
 * The request budget in practice. A first poll under the client-side token bucket (src/cmdb/budget.ts)
 * sends `burst` requests at once and the rest at the configured rate, so its duration is about
 * (requests − burst) / rate. The hourly volume follows the table in docs/design.md, fed with the
 * request counts the benchmark measured per endpoint.
 */
import { burstFor } from '../src/cmdb/budget.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import { DEFAULT_INTERVALS } from '../src/config/types.js';
import type { SizeResult } from './results.js';

export const DEFAULT_RATE = BUILTIN_SETTINGS.rateLimitPerMinute;

/** Seconds a first poll of `requests` requests waits for the budget (request latency not included). */
export function budgetSeconds(requests: number, ratePerMinute: number): number {
  return (Math.max(0, requests - burstFor(ratePerMinute)) * 60) / ratePerMinute;
}

export interface HourlyVolume {
  readonly connectorPages: number;
  readonly actionPages: number;
  readonly actions: number;
  /** Assumed: half the Actions ran in the hour (the typical stack of docs/design.md: 20 of 40). */
  readonly changedActions: number;
  readonly trackedNames: number;
  readonly perHour: number;
  /** Share of the default budget (rate × 60) that the steady state uses. */
  readonly budgetShare: number;
  /** Minutes the hourly refresh of every Action's jobs occupies the budget on its own. */
  readonly refreshBurstMinutes: number;
}

const perHour = (intervalSeconds: number) => 3600 / intervalSeconds;
/** docs/design.md: list + next every minute, detail once per run plus each minute of a 20-minute run. */
const INGESTION_PER_HOUR = 2 * perHour(DEFAULT_INTERVALS.ingestion) + 21;

/** docs/design.md "Expected request volume", with C, P, A and T as measured for one size. */
export function hourlyVolume(size: SizeResult, ratePerMinute = DEFAULT_RATE): HourlyVolume {
  const seen = size.repeat.requestsByEndpoint;
  const connectorPages = seen.connector ?? 0;
  const actionPages = seen.actions ?? 0;
  const actions = size.hourLater.requestsByEndpoint.action_jobs ?? 0;
  const changedActions = Math.round(actions / 2);
  const trackedNames = (seen.asset_change ?? 0) + (seen.user_change ?? 0);
  const i = DEFAULT_INTERVALS;
  const total =
    perHour(i.inventory) +
    perHour(i.license) +
    perHour(i.connectors) * connectorPages +
    INGESTION_PER_HOUR +
    perHour(i.actions) * actionPages +
    changedActions +
    actions +
    perHour(i.changes) * trackedNames;
  return {
    connectorPages,
    actionPages,
    actions,
    changedActions,
    trackedNames,
    perHour: Math.round(total),
    budgetShare: total / (ratePerMinute * 60),
    refreshBurstMinutes: actions / ratePerMinute,
  };
}
