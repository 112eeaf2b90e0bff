/**
 * `--fill-gaps`: what one run searches, and how it fills what it finds (docs/backfill.md, "Filling
 * a gap after the exporter was down"). A gap is written from its exact start (a millisecond after
 * the first missed scrape: gaps.ts) every scrape interval, so that each sample comes after the
 * staleness markers a scraper writes at a missed scrape, or at the first one that answers after
 * them (VictoriaMetrics since 1.140); one longer than FINE_GAP_SECONDS at the backfill's steps.
 */
import { formatDuration } from '../config/durations.js';
import { formatGap, scrapeIntervalOf, stackGaps, TOLERATED_MISSED_SCRAPES } from './gaps.js';
import type { PrometheusApi } from './prometheus-api.js';
import { rangeWords } from './range.js';

/** Gaps up to this long are written at the target's scrape interval; longer ones at the backfill's steps. */
export const FINE_GAP_SECONDS = 6 * 3600;

/** Ranges of unix seconds, both ends inclusive. */
export type Ranges = Array<[number, number]>;

/** What a run searches: its range, in words, and why it is less than was asked (empty when it is not). */
export interface Searched {
  readonly from: number;
  readonly to: number;
  readonly words: string;
  readonly why: readonly string[];
}

/** The range a --fill-gaps run searches: a blocks run's start no older than the retention of the Prometheus it fills. */
export function searchedRange(o: { from: number; to: number; toText: string; now: number; blocks: boolean; retentionSeconds?: number; url?: string }): Searched {
  const why: string[] = [];
  let from = o.from;
  if (o.blocks && o.retentionSeconds !== undefined && from < o.now - o.retentionSeconds) {
    from = o.now - o.retentionSeconds;
    why.push(`not the ${formatDuration(Math.round(from - o.from))} before that: ${o.url} keeps ${formatDuration(o.retentionSeconds)} (--storage.tsdb.retention.time) and deletes older blocks at once`);
  }
  if (o.blocks && o.toText === 'now-3h') {
    why.push('not the last 3h: blocks stay out of the time Prometheus still holds in its head block (fill by remote write, --remote-write.url, to search up to now)');
  }
  return { from, to: o.to, words: rangeWords(from, o.to, o.now), why };
}

/** `searched 7d up to now` and, when it is less than was asked, why. */
export function searchedText(s: Searched): string {
  return `searched ${s.words}${s.why.length > 0 ? ` (${s.why.join('; ')})` : ''}`;
}

/** The gaps of one stack up to FINE_GAP_SECONDS long: written at the scrape interval. */
export function fineRanges(ranges: ReadonlyArray<readonly [number, number]>): Ranges {
  return ranges.filter(([a, b]) => b - a <= FINE_GAP_SECONDS).map(([a, b]) => [a, b]);
}

/** Searches one stack's gaps and says what it found; returns them and the scrape interval they are written at. */
export async function searchStack(
  api: PrometheusApi,
  q: { job: string; instance: string; stack: string; searched: Searched; now: number; stepFlag: number | undefined },
  say: (text: string) => void,
): Promise<{ ranges: Ranges; interval: number }> {
  const interval = await scrapeIntervalOf(api, q, [q.now, q.searched.to]);
  // A VictoriaMetrics answers range queries for its last 30 s (-search.latencyOffset) with the value
  // before them: not yet known there, not missing.
  const latency = await api.latencySeconds();
  const to = Math.min(q.searched.to, q.now - latency);
  const unsettled = to < q.searched.to ? ` (not its last ${formatDuration(Math.round(q.searched.to - to))}: a VictoriaMetrics answers for them only after -search.latencyOffset)` : '';
  const gaps = await stackGaps(api, { job: q.job, instance: q.instance, stack: q.stack, from: q.searched.from, to, interval: interval.seconds });
  const how = ([a, b]: readonly [number, number]) =>
    q.stepFlag !== undefined ? '' : b - a <= FINE_GAP_SECONDS ? `, written every ${formatDuration(interval.seconds)}` : `, written at the backfill's steps (longer than ${formatDuration(FINE_GAP_SECONDS)})`;
  say(
    `gaps of stack ${q.stack} (job ${q.job}, instance ${q.instance}) in ${api.url}, ${searchedText(q.searched)}${unsettled}, scrape interval ${formatDuration(interval.seconds)} (${interval.from}); holes of ${TOLERATED_MISSED_SCRAPES} missed scrapes or fewer are not gaps:` +
      (gaps.length === 0 ? ' none' : gaps.map((g) => `\n  ${formatGap(g, formatDuration)}${how(g)}`).join('')),
  );
  return { ranges: gaps.map((g) => [g[0], g[1]]), interval: interval.seconds };
}
