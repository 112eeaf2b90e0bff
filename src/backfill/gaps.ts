/**
 * `--fill-gaps`: where, inside the range, this exporter's series are missing in the Prometheus that
 * scrapes it (docs/backfill.md, "Where the exporter is covered"). Only Prometheus' own evidence
 * counts: a good scrape (`up` 1 and some `cmdb_endpoint_up` of the stack 1) or a backfill's
 * coverage mark (coverage.ts); the families' samples prove nothing about the time after them (the
 * last one before a crash would "cover" the 5-minute look-back). Asked at the target's scrape
 * interval; a hole is more than TOLERATED_MISSED_SCRAPES missed scrapes, its start made exact from
 * the raw samples around it (exactStart).
 */
import { COVERAGE_METRIC, COVERAGE_SPACING_SECONDS } from './coverage.js';
import { promString, type PrometheusApi } from './prometheus-api.js';

/** Missed scrapes in a row that are not yet a gap. */
export const TOLERATED_MISSED_SCRAPES = 2;

/** A hole in the covered points: [from, to] to fill (unix seconds, inclusive). */
export type Gap = readonly [number, number];

/**
 * The gaps of [from, to] given the covered points of the grid `interval` apart from
 * `floor(from / interval) * interval`: each run of more than TOLERATED_MISSED_SCRAPES points not
 * covered, from just after the covered point before it (or `from`) to its last point (or `to`).
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

/**
 * The scrape interval of the target examined (its `job`, `instance`, and `stack` where /sd gives each
 * stack a target): its own in /api/v1/targets (under prometheus-operator the `job` label is not the
 * configuration's job_name), else the spacing of its `up` samples, else 1m.
 */
export async function scrapeIntervalOf(api: PrometheusApi, target: { job: string; instance: string; stack: string }, at: readonly number[]): Promise<{ seconds: number; from: string }> {
  const targets = await api.targets().catch(() => []);
  const same = targets.filter((t) => t.labels.job === target.job && t.labels.instance === target.instance);
  const own = same.find((t) => t.labels.stack === target.stack) ?? same.find((t) => !t.labels.stack) ?? same[0];
  if (own?.scrapeIntervalSeconds) return { seconds: own.scrapeIntervalSeconds, from: "the target's own, in /api/v1/targets" };
  for (const time of at) {
    const series = await api.samples(`up{job=${promString(target.job)},instance=${promString(target.instance)}}[1h]`, time);
    const spacing = medianSpacing((series[0]?.values ?? []).map((v) => v[0]));
    if (spacing) return { seconds: Math.round(spacing), from: "the spacing of up's samples" };
  }
  return { seconds: 60, from: 'nothing to go by: assumed' };
}

/** Raw samples near a gap's start: `up` of the target, and each cmdb_endpoint_up of the stack. */
export interface EdgeSamples {
  readonly up: ReadonlyArray<readonly [number, string]>;
  readonly endpoints: ReadonlyArray<ReadonlyArray<readonly [number, string]>>;
}

/** A time a millisecond later (unix seconds, kept to the millisecond). */
const justAfter = (t: number) => Math.round(t * 1000 + 1) / 1000;

/**
 * Where a gap found on the grid begins exactly, from the raw samples around it: the grid's start
 * may be a scrape early (Prometheus 3 leaves a window's left edge open, 2 closed). After L, the last
 * good scrape (up 1 and some cmdb_endpoint_up of the stack 1), the first scrape S that was not good
 * is where Prometheus wrote its staleness markers: the gap starts a millisecond after S, so that the
 * fill comes after them. Without such a scrape (Prometheus was not scraping) it starts at L +
 * interval. Unchanged when no good scrape is near (the range starts inside the gap).
 */
export function exactStart(gap: Gap, samples: EdgeSamples, interval: number): number {
  const [start, end] = gap;
  const good = new Set<number>();
  for (const series of samples.endpoints) for (const [t, v] of series) if (Number(v) === 1) good.add(t);
  const firstMissed = start - 1 + interval;
  const last = Math.max(...samples.up.filter(([t, v]) => Number(v) === 1 && good.has(t) && t <= firstMissed).map(([t]) => t));
  if (!Number.isFinite(last)) return start;
  const next = samples.up.map(([t]) => t).find((t) => t > last);
  const exact = next !== undefined && next < end ? justAfter(next) : last + interval;
  return Math.min(end, exact);
}

/**
 * Where a gap found on the grid ends, given its exact start: its last point, or a millisecond after
 * it where a missed scrape (`interval` apart from the first, a millisecond before `start`) fell on
 * that very point, so that the fill's sample just after that scrape is inside the gap too.
 */
export function exactEnd(gap: Gap, start: number, interval: number): number {
  const sinceFirstMissed = Math.round((gap[1] - start) * 1000) + 1;
  return sinceFirstMissed > 0 && sinceFirstMissed % Math.round(interval * 1000) === 0 ? justAfter(gap[1]) : gap[1];
}

/** The gaps of one stack: where neither a good scrape nor a backfill's coverage mark covers, made exact. */
export async function stackGaps(api: PrometheusApi, q: { job: string; instance: string; stack: string; from: number; to: number; interval: number }): Promise<Gap[]> {
  const target = `job=${promString(q.job)},instance=${promString(q.instance)}`;
  const stack = `stack=${promString(q.stack)}`;
  const w = `${q.interval}s`;
  const scrapedExpr = `(max(last_over_time(cmdb_endpoint_up{${target},${stack}}[${w}])) == 1) and on() (max(last_over_time(up{${target}}[${w}])) == 1)`;
  const backfilledExpr = `max(max_over_time(${COVERAGE_METRIC}{${target},${stack}}[${COVERAGE_SPACING_SECONDS}s])) >= time()`;
  const start = Math.floor(q.from / q.interval) * q.interval;
  const points = async (expr: string) => ((await api.queryRange(expr, start, q.to, q.interval))[0]?.values ?? []).map((v) => Number(v[0]));
  const covered = [...(await points(scrapedExpr)), ...(await points(backfilledExpr))];
  const gaps: Gap[] = [];
  for (const gap of findGaps(covered, q.from, q.to, q.interval)) {
    if (gap[0] <= q.from) {
      gaps.push(gap);
      continue;
    }
    // From two scrapes before the grid's start to two after it: the last good scrape and the first missed one.
    const until = Math.min(gap[1], gap[0] - 1 + 3 * q.interval);
    const range = `[${Math.ceil(until - (gap[0] - 1 - 2 * q.interval)) + 1}s]`;
    const [up, endpoints] = await Promise.all([api.samples(`up{${target}}${range}`, until), api.samples(`cmdb_endpoint_up{${target},${stack}}${range}`, until)]);
    const start = Math.max(q.from, exactStart(gap, { up: up[0]?.values ?? [], endpoints: endpoints.map((s) => s.values) }, q.interval));
    gaps.push([start, gap[1] < q.to ? exactEnd(gap, start, q.interval) : gap[1]]);
  }
  return gaps;
}

const iso = (s: number) => new Date(Math.round(s * 1000)).toISOString().replace('.000Z', 'Z');

/** `2026-11-20T08:00:15Z to 2026-11-20T10:00:00Z (2h)` */
export function formatGap([from, to]: Gap, duration: (s: number) => string): string {
  return `${iso(from)} to ${iso(to)} (${duration(Math.round(to - from + 1))})`;
}
