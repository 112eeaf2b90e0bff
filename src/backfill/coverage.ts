/**
 * The mark a backfill leaves where it wrote a stack's series, so that `--fill-gaps` can tell a time
 * a backfill covered from a time the live exporter covered: the families themselves cannot say it
 * (they are the same series, by design), and the state of a backfill stays in its own --out.
 *
 * `cmdb_backfill_covered_until_timestamp_seconds{job, instance, stack}` is a series only the
 * backfill writes, never the daemon: on every stretch of a window it wrote with nothing of the
 * stack missing, a sample at the stretch's start, every COVERAGE_SPACING_SECONDS after it and at
 * its end, each holding the stretch's end (unix seconds). A time t is covered by a backfill when a
 * sample within COVERAGE_SPACING_SECONDS before it (or at it) holds t or later: exactly the
 * stretches written, never reaching past their end. A stretch with a unit missing (a day's counts,
 * an Action's jobs) gets no mark until a later run of the same command writes the missing unit.
 */
import type { MetricFamily } from '../metrics/catalogue.js';
import { formatLabels, formatValue } from '../metrics/series-text.js';
import { BACKFILLED_FAMILIES, type Line } from './replay.js';

export const COVERAGE_METRIC = 'cmdb_backfill_covered_until_timestamp_seconds';
export const COVERAGE_SPACING_SECONDS = 60;
/** The unit the marks come from (answers.ts keys name the read units; this one is written, not read). */
export const COVERAGE_SOURCE = 'backfill-coverage';

export const COVERAGE_FAMILY: MetricFamily = {
  name: COVERAGE_METRIC,
  type: 'gauge',
  labels: ['stack'],
  help: 'Written by cmdb-exporter backfill only, never served: the end (unix seconds) of the stretch of the stack\'s series this backfill wrote, at its start, every minute of it and its end. --fill-gaps counts a time as covered where a sample of the minute before holds that time or later.',
  origin: 'snapshot',
};

/** Every family a backfill writes: the replayed ones, in catalogue order, then its coverage mark. */
export const WRITTEN_FAMILIES: readonly MetricFamily[] = [...BACKFILLED_FAMILIES, COVERAGE_FAMILY];
const COVERAGE_INDEX = BACKFILLED_FAMILIES.length;

/** The times of the marks of the stretch [from, to] (unix seconds, inclusive): its start, every spacing after, its end. */
export function coverageTimes(from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = from; t < to; t += COVERAGE_SPACING_SECONDS) out.push(t);
  out.push(to);
  return out;
}

/** The mark line of a stretch ending at `to`, with the target labels and the stack. */
export function coverageLine(labels: Readonly<Record<string, string>>, to: number): Line {
  const key = `${COVERAGE_METRIC}${formatLabels(COVERAGE_FAMILY.labels, labels)}`;
  return { family: COVERAGE_INDEX, key, text: `${key} ${formatValue(to)}`, value: to, labels, source: COVERAGE_SOURCE };
}
