/**
 * `--fill-gaps`: where, inside the range, are this exporter's series missing in the Prometheus
 * that scrapes it? Only Prometheus' own evidence counts. A stack is covered at a time when a scrape
 * of the live target succeeded then (`up` of the job and instance is 1, and some
 * `cmdb_endpoint_up` of the stack, the exporter's own, is 1: its CMDB answered), or when a backfill
 * wrote it (its coverage mark, coverage.ts: a series only the backfill writes). The families'
 * samples themselves prove nothing about a time after them: the last live sample before a crash
 * would "cover" Prometheus' 5-minute look-back, and a crash shorter than that would vanish.
 *
 * Asked at the scrape interval: a point says whether a good scrape fell in the interval before it
 * (`last_over_time(…[interval])`, no look-back reaching forward). A hole is a run of missed scrapes
 * (points not covered) longer than TOLERATED_MISSED_SCRAPES, from just after the last covered point
 * (the first missed scrape) to its last missed point (before the next good scrape).
 */
import { COVERAGE_METRIC, COVERAGE_SPACING_SECONDS } from './coverage.js';
import { promString, type PrometheusApi } from './prometheus-api.js';

/** Missed scrapes in a row that are not yet a gap. */
export const TOLERATED_MISSED_SCRAPES = 2;

/** A hole in the covered points: [from, to] to fill (unix seconds, inclusive). */
export type Gap = readonly [number, number];

/**
 * The gaps of [from, to] given the covered points of the grid `interval` apart that starts at or
 * before `from` (`floor(from / interval) * interval`): each run of more than TOLERATED_MISSED_SCRAPES
 * points not covered, from just after the covered point before it (or `from`) to its last point (or
 * `to` when it reaches the end of the range).
 */
export function findGaps(covered: readonly number[], from: number, to: number, interval: number): Gap[] {
  const isCovered = new Set(covered);
  const gaps: Gap[] = [];
  let start: number | undefined;
  let last = from;
  let missed = 0;
  const close = (end: number) => {
    if (start !== undefined && missed > TOLERATED_MISSED_SCRAPES) gaps.push([start, Math.min(to, end)]);
    start = undefined;
    missed = 0;
  };
  let previous = from - 1;
  for (let t = Math.floor(from / interval) * interval; t <= to; t += interval) {
    // A point before the range only says where the scrape before it was.
    if (t < from && !isCovered.has(t)) continue;
    if (isCovered.has(t)) {
      close(last);
      previous = t;
      continue;
    }
    start ??= Math.max(from, previous + 1);
    missed += 1;
    last = t;
  }
  close(to);
  return gaps;
}

/** The median distance between samples, or undefined with fewer than three. */
export function medianSpacing(times: readonly number[]): number | undefined {
  if (times.length < 3) return undefined;
  const d = times.slice(1).map((t, i) => t - (times[i] as number)).sort((a, b) => a - b);
  return d[Math.floor(d.length / 2)];
}

/** The scrape interval of the target: the configuration's, else what its `up` samples show, else 1m. */
export async function scrapeIntervalOf(api: PrometheusApi, job: string, instance: string, at: readonly number[]): Promise<{ seconds: number; from: string }> {
  const configured = await api.scrapeInterval(job);
  if (configured) return { seconds: configured, from: "the job's scrape_interval" };
  for (const time of at) {
    const series = await api.samples(`up{job=${promString(job)},instance=${promString(instance)}}[1h]`, time);
    const spacing = medianSpacing((series[0]?.values ?? []).map((v) => v[0]));
    if (spacing) return { seconds: Math.round(spacing), from: "the spacing of up's samples" };
  }
  return { seconds: 60, from: 'nothing to go by: assumed' };
}

/**
 * The gaps of one stack: covered where up is 1 and some cmdb_endpoint_up of the stack is 1 (a point
 * looking back one scrape interval), or where a backfill's coverage mark says it wrote that time.
 */
export async function stackGaps(api: PrometheusApi, q: { job: string; instance: string; stack: string; from: number; to: number; interval: number }): Promise<Gap[]> {
  const target = `job=${promString(q.job)},instance=${promString(q.instance)}`;
  const stack = `stack=${promString(q.stack)}`;
  const w = `${q.interval}s`;
  const scrapedExpr = `(max(last_over_time(cmdb_endpoint_up{${target},${stack}}[${w}])) == 1) and on() (max(last_over_time(up{${target}}[${w}])) == 1)`;
  const backfilledExpr = `max(max_over_time(${COVERAGE_METRIC}{${target},${stack}}[${COVERAGE_SPACING_SECONDS}s])) >= time()`;
  const start = Math.floor(q.from / q.interval) * q.interval;
  const points = async (expr: string) => ((await api.queryRange(expr, start, q.to, q.interval))[0]?.values ?? []).map((v) => Number(v[0]));
  const covered = [...(await points(scrapedExpr)), ...(await points(backfilledExpr))];
  return findGaps(covered, q.from, q.to, q.interval);
}

const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

/** `2026-11-20T08:00:15Z to 2026-11-20T10:00:00Z (2h)` */
export function formatGap([from, to]: Gap, duration: (s: number) => string): string {
  return `${iso(from)} to ${iso(to)} (${duration(to - from + 1)})`;
}
