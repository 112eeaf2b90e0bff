/**
 * `--fill-gaps`: where, inside the range, are this exporter's series missing in the Prometheus
 * that scrapes it? A stack is covered at a time when its target was scraped (`up` of the job and
 * instance is 1) and the stack's CMDB answered (its `cmdb_endpoint_up`, the exporter's own, is 1 for
 * some endpoint), or when a backfill already wrote it (a backfilled family of the stack has a
 * sample within a step); elsewhere it is a gap. Asked at the scrape interval with
 * `last_over_time(…[interval])`, so a point says whether a sample fell in the interval before it
 * (no 5-minute look-back blurs the edges). A gap of a scrape interval or two (a missed scrape, a
 * slow poll) is not a gap.
 */
import { promString, type PrometheusApi } from './prometheus-api.js';

/** Missed scrapes in a row that are not yet a gap. */
export const TOLERATED_MISSED_SCRAPES = 2;

/** A hole in the covered points: [from, to] to fill (unix seconds, inclusive). */
export type Gap = readonly [number, number];

/**
 * The gaps of [from, to] given the covered points (ascending unix seconds, `interval` apart when
 * nothing is missing): each from just after the last sample before it to just before the covered
 * point after it, the range's ends standing in for points at its edges. A point covers `reach(t)`
 * seconds before it (the window it was asked with), so that is where the last sample may lie.
 * Runs of up to TOLERATED_MISSED_SCRAPES missing points are not gaps.
 */
export function findGaps(covered: readonly number[], from: number, to: number, interval: number, reach: (t: number) => number = () => interval): Gap[] {
  const longest = (TOLERATED_MISSED_SCRAPES + 1) * interval;
  const gaps: Gap[] = [];
  const points = covered.filter((t) => t >= from && t <= to);
  // The range's edges count as covered only when a point is near them.
  let prev: number | undefined;
  let last = from - interval;
  for (const t of [...points, to + interval]) {
    if (t - last > longest) gaps.push([Math.max(from, prev === undefined ? from : prev - reach(prev) + 1), Math.min(to, t - 1)]);
    prev = t;
    last = t;
  }
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

/** Families every backfill of a stack writes one of (whichever endpoints it reads). */
const BACKFILL_MARKERS = 'cmdb_assets|cmdb_connector_info|cmdb_ingestion_runs|cmdb_action_info|cmdb_record_changes';

/**
 * The gaps of one stack: covered where up is 1 and some cmdb_endpoint_up of the stack is 1 (a
 * point looking back one scrape interval), or where a backfilled family of the stack has a sample
 * (looking back `backfillStep`, the spacing of backfilled samples).
 */
export async function stackGaps(api: PrometheusApi, q: { job: string; instance: string; stack: string; from: number; to: number; interval: number; backfillStep: number }): Promise<Gap[]> {
  const target = `job=${promString(q.job)},instance=${promString(q.instance)}`;
  const stack = `stack=${promString(q.stack)}`;
  const w = `${q.interval}s`;
  const reach = Math.max(q.interval, q.backfillStep);
  const scrapedExpr = `(max(last_over_time(cmdb_endpoint_up{${target},${stack}}[${w}])) == 1) and on() (max(last_over_time(up{${target}}[${w}])) == 1)`;
  const backfilledExpr = `count(last_over_time({__name__=~${promString(BACKFILL_MARKERS)},${target},${stack}}[${reach}s])) > 0`;
  const start = Math.floor(q.from / q.interval) * q.interval;
  const points = async (expr: string) => ((await api.queryRange(expr, start, q.to, q.interval))[0]?.values ?? []).map((v) => Number(v[0]));
  const scraped = new Set(await points(scrapedExpr));
  const covered = [...new Set([...scraped, ...(await points(backfilledExpr))])].sort((a, b) => a - b);
  return findGaps(covered, q.from, q.to, q.interval, (t) => (scraped.has(t) ? q.interval : reach));
}

const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');

/** `2026-11-20T08:00:15Z to 2026-11-20T10:00:00Z (2h)` */
export function formatGap([from, to]: Gap, duration: (s: number) => string): string {
  return `${iso(from)} to ${iso(to)} (${duration(to - from + 1)})`;
}
