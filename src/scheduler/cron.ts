/**
 * The node-cron expressions a poll interval runs on.
 *
 * A cron expression fires at the cross product of its seconds, minutes and hours, so an interval
 * that divides a minute, an hour or a day by whole minutes or hours is one expression
 * (`7,37 * * * * *` for 30s at offset 7). An interval that divides a day but not that way, such as
 * 90s (00:00:00, 00:01:30, 00:03:00, …) or 45m (00:00, 00:45, 01:30, 02:15, …), is no cross product:
 * its firings are split into expressions that are (for 90s, `0 0,3,…,57 * * * *` and
 * `30 1,4,…,58 * * * *`; for 45m, three). Together they fire exactly at offset + k × interval of
 * every UTC day, each instant once. The usual intervals take one to five; an odd one such as 2m8s
 * takes up to 120 (one node-cron timer each, each firing a few times a day).
 */
import { DAY_SECONDS, intervalProblem } from '../config/durations.js';

/** `*` for every value of the field, else the list. */
function field(values: readonly number[], size: number): string {
  return values.length === size ? '*' : values.join(',');
}

/** Groups `items` by `key`, in first-seen order. */
function groupBy<T>(items: Iterable<T>, key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}

/**
 * 6-field node-cron expressions (seconds first) that together fire every `intervalSeconds`, shifted
 * by `offsetSeconds` (rounded down to whole seconds, taken modulo the interval) so that jobs of
 * several groups and stacks start spread out. The interval must divide a day (validated at load).
 *
 * The instants are wall-clock instants in the timezone node-cron is given; pass `timezone: 'UTC'`
 * so that they stay regular across daylight-saving changes.
 */
export function cronExpressions(intervalSeconds: number, offsetSeconds: number): string[] {
  const problem = intervalProblem(intervalSeconds);
  if (problem !== undefined) throw new RangeError(`interval ${intervalSeconds}: ${problem}`);
  if (!Number.isFinite(offsetSeconds)) throw new RangeError(`offset must be a finite number, got ${offsetSeconds}`);
  const interval = intervalSeconds;
  const offset = ((Math.floor(offsetSeconds) % interval) + interval) % interval;
  // The hours at which each (second, minute) of an hour fires.
  const hoursOf = new Map<number, { second: number; minute: number; hours: number[] }>();
  for (let t = offset; t < DAY_SECONDS; t += interval) {
    const second = t % 60;
    const minute = Math.floor(t / 60) % 60;
    const at = hoursOf.get(t % 3600) ?? { second, minute, hours: [] };
    at.hours.push(Math.floor(t / 3600));
    hoursOf.set(t % 3600, at);
  }
  // (second, minute) pairs on the same hours; of those, the seconds with the same minutes: each
  // group is a cross product seconds × minutes × hours, and the groups split the firings.
  const expressions: string[] = [];
  for (const sameHours of groupBy(hoursOf.values(), (p) => p.hours.join(','))) {
    const hours = sameHours[0]?.hours ?? [];
    const minutesOf = groupBy(sameHours, (p) => String(p.second)).map((ps) => ({ second: ps[0]?.second ?? 0, minutes: ps.map((p) => p.minute).sort((a, b) => a - b) }));
    for (const sameMinutes of groupBy(minutesOf, (s) => s.minutes.join(','))) {
      const seconds = sameMinutes.map((s) => s.second).sort((a, b) => a - b);
      expressions.push(`${field(seconds, 60)} ${field(sameMinutes[0]?.minutes ?? [], 60)} ${field(hours, 24)} * * *`);
    }
  }
  return expressions;
}
