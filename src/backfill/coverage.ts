/**
 * The mark a backfill leaves where it wrote a stack's series, so that `--fill-gaps` can tell a time
 * a backfill covered from one the live exporter covered: the families cannot say it (they are the
 * same series, by design). A series only the backfill writes, on every stretch of a window it wrote
 * with nothing of the stack missing (docs/backfill.md, "Where the exporter is covered"): a sample
 * at the stretch's start, every COVERAGE_SPACING_SECONDS and at its end, each holding its end.
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
