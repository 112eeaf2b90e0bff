/**
 * The time range and step of a backfill from the command line (`--from 30d`, `--to now-3h`, `--step
 * 5m`); pure: the caller passes the time. A time is `now`, `now-<duration>`, a bare `<duration>`
 * (that long before now), an ISO 8601 time or day, or unix seconds. The range ends 3 hours before
 * now by default (docs/backfill.md, "Blocks": Prometheus' head block), and now for a search for
 * gaps written by remote write (`upToNow`), so that the outage the user just had is found.
 */
import { formatDuration, parseDuration } from '../config/durations.js';

/** Default distance of the range's end from now (Prometheus keeps about this much in its head block). */
export const DEFAULT_END_BEFORE_NOW_SECONDS = 3 * 3600;
/** A step below this makes more samples than any scrape interval would. */
export const MIN_STEP_SECONDS = 1;
/** A clock skew allowance for `--to now`: a range ending at most this far past now is not "in the future". */
const FUTURE_SLACK_SECONDS = 60;

export class BackfillRangeError extends Error {
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`${flag}: ${message}`);
  }
}

export interface BackfillRange {
  /** Unix seconds, both inclusive. */
  readonly from: number;
  readonly to: number;
  /** One step for every group, or undefined for each group's own poll interval. */
  readonly step: number | undefined;
  /** The end is within 3 hours of now: blocks of it overlap Prometheus' head block (a warning for blocks only, run.ts). */
  readonly intoHead: boolean;
  /** How the end was chosen, for the output: `now`, `now-3h` (the default of blocks), or as --to gave it. */
  readonly toText: string;
}

const UNIX_SECONDS = /^\d{9,10}(?:\.\d+)?$/;

/** One time of the command line in unix seconds, or a RangeError naming the flag. */
export function parseTime(flag: string, text: string, nowSeconds: number): number {
  const t = text.trim();
  if (t === 'now') return nowSeconds;
  const rel = /^now\s*-\s*(.+)$/.exec(t);
  const relative = rel ? rel[1] ?? '' : /^\d+(?:\.\d+)?(?:ms|s|m|h|d)/.test(t) ? t : undefined;
  if (relative !== undefined) {
    const d = parseDuration(relative);
    if (d === undefined || /^\d+(?:\.\d+)?$/.test(relative.trim())) {
      throw new BackfillRangeError(flag, `${JSON.stringify(text)} is not a duration (e.g. 30d, 12h, 90m)`);
    }
    return nowSeconds - d;
  }
  if (UNIX_SECONDS.test(t)) return Number(t);
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(t) ? `${t}T00:00:00Z` : t);
  if (!Number.isFinite(ms)) {
    throw new BackfillRangeError(flag, `${JSON.stringify(text)} is not a time: give now, now-3h, a duration back from now (30d), an ISO 8601 time or unix seconds`);
  }
  return ms / 1000;
}

/** The step: a duration of at least 1 s. */
export function parseStep(text: string): number {
  const d = parseDuration(text);
  if (d === undefined) throw new BackfillRangeError('--step', `${JSON.stringify(text)} is not a duration (e.g. 30s, 5m, 1h)`);
  if (d < MIN_STEP_SECONDS) throw new BackfillRangeError('--step', `${formatDuration(d)} is below the smallest step of 1s`);
  return d;
}

const iso = (s: number) => new Date(s * 1000).toISOString();

/** The default --to: now for a search for gaps written by remote write, else 3 hours before now. */
export function defaultTo(upToNow: boolean): string {
  return upToNow ? 'now' : 'now-3h';
}

/** `--from` (required), `--to` (default now-3h, or now with `upToNow`), `--step` (default: each group's interval) → a checked range. */
export function parseRange(opts: { from?: string; to?: string; step?: string; upToNow?: boolean }, nowSeconds: number): BackfillRange {
  if (opts.from === undefined) throw new BackfillRangeError('--from', 'is required: where the backfill starts (e.g. --from 30d)');
  const from = Math.floor(parseTime('--from', opts.from, nowSeconds));
  const toText = opts.to ?? defaultTo(opts.upToNow === true);
  const to = Math.floor(parseTime('--to', toText, nowSeconds));
  const step = opts.step === undefined ? undefined : parseStep(opts.step);
  if (from > nowSeconds + FUTURE_SLACK_SECONDS) {
    throw new BackfillRangeError('--from', `${iso(from)} is in the future (now is ${iso(nowSeconds)}); the CMDB has no history there`);
  }
  if (to > nowSeconds + FUTURE_SLACK_SECONDS) {
    throw new BackfillRangeError('--to', `${iso(to)} is in the future (now is ${iso(nowSeconds)}); end the range at now or earlier`);
  }
  if (from >= to) {
    throw new BackfillRangeError('--from', `${iso(from)} is not before --to ${iso(to)}: the range is empty (the default --to is ${defaultTo(opts.upToNow === true)})`);
  }
  return { from, to, step, intoHead: to > nowSeconds - DEFAULT_END_BEFORE_NOW_SECONDS, toText };
}

/**
 * The warning of a blocks run whose range reaches into Prometheus' head block, where it applies:
 * before Prometheus 2.39 a block overlapping another is ignored (`version` undefined: not known).
 */
export function headBlockWarning(range: BackfillRange, version: string | undefined): string | undefined {
  if (!range.intoHead || (version !== undefined && !before239(version))) return undefined;
  const who = version === undefined ? 'a Prometheus before 2.39 ignores a block overlapping it' : `Prometheus ${version} (before 2.39) ignores a block overlapping it`;
  return `--to ${iso(range.to)} is within 3h of now: Prometheus may still hold that time in its head block, and ${who} (or needs --storage.tsdb.allow-overlapping-blocks)`;
}

/** Whether a Prometheus version (`2.38.0`, `v2.42.0+ds`) is before 2.39; unknown forms count as not. */
function before239(version: string): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(version.trim());
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major < 2 || (major === 2 && minor < 39);
}

/** The range in words, for the plan line and the summary: how far back it starts, and up to when (`7d up to now`, `30d up to 3h ago`). */
export function rangeWords(from: number, to: number, nowSeconds: number): string {
  const back = nowSeconds - to;
  return `${roughly(nowSeconds - from)} up to ${back < FUTURE_SLACK_SECONDS ? 'now' : `${roughly(back)} ago`}`;
}

/** A duration as words need it: to the hour past two days, to the minute past an hour. */
function roughly(seconds: number): string {
  const unit = seconds >= 2 * 86_400 ? 3600 : seconds >= 3600 ? 60 : 1;
  return formatDuration(Math.round(seconds / unit) * unit);
}
