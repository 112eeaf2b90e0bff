/**
 * The one way collectors build samples: finite values only, state sets through the stack's
 * StateMemory, and every state-set entity that was not seen in this poll forgotten at the end.
 */
import type { Labels, Sample } from '../metrics/sample.js';
import { parseTimestamp } from '../time.js';
import type { CollectorContext } from './types.js';

/**
 * The items in order, each key once. A repeat (pages shift while they are read; a list may name an
 * entity twice) would make two series with one label set: the first one stands, the repeat is
 * logged at debug with `repeated` and `fields(key)`.
 */
export function* firstOfEach<T>(
  items: Iterable<T>,
  keyOf: (item: T) => string,
  ctx: CollectorContext,
  repeated: string,
  fields: (key: string) => Record<string, unknown>,
): Generator<T> {
  const seen = new Set<string>();
  for (const item of items) {
    const key = keyOf(item);
    if (seen.has(key)) {
      ctx.debug(repeated, fields(key));
      continue;
    }
    seen.add(key);
    yield item;
  }
}

export class SampleSet {
  private readonly samples: Sample[] = [];
  private readonly liveKeys = new Map<string, Labels[]>();

  constructor(private readonly ctx: CollectorContext) {}

  /** Emits the sample when `value` is a finite number; absent values (undefined) emit nothing. */
  gauge(name: string, labels: Labels, value: number | undefined): void {
    if (value === undefined) return;
    if (!Number.isFinite(value)) {
      this.ctx.debug('value is not a finite number; sample dropped', { metric: name, labels });
      return;
    }
    this.samples.push({ name, labels, value });
  }

  info(name: string, labels: Labels): void {
    this.gauge(name, labels, 1);
  }

  /**
   * One series per known state of the entity `key`: `base` plus the states seen recently
   * (StateMemory, bounded), 1 for `current` and 0 for the others. An empty or absent current state
   * is not recorded, so all series are 0 then.
   */
  stateSet(name: string, key: Labels, stateLabel: string, current: string | undefined, base: readonly string[]): void {
    const live = this.liveKeys.get(name);
    if (live) live.push(key);
    else this.liveKeys.set(name, [key]);
    const state = current === '' ? undefined : current;
    for (const known of this.ctx.states.states(name, key, state, this.ctx.now, base)) {
      this.samples.push({ name, labels: { ...key, [stateLabel]: known }, value: known === state ? 1 : 0 });
    }
  }

  /**
   * The samples, after telling StateMemory which entities of each of `stateSets` are still live
   * (a metric with no entity this poll forgets them all).
   */
  finish(stateSets: readonly string[]): Sample[] {
    for (const metric of stateSets) this.ctx.states.retain(metric, this.liveKeys.get(metric) ?? []);
    return this.samples;
  }
}

/** A label value: text as sent, "" when the source is missing. */
export function label(value: string | null | undefined): string {
  return value ?? '';
}

/** A status as sent, for a state set; undefined when missing or blank (no state). */
export function statusText(status: string | null | undefined): string | undefined {
  return status != null && status.trim() !== '' ? status : undefined;
}

/** The value for the debug log of an unparseable field: short, since it is free text from the CMDB. */
export function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

/** Index of the element with the greatest `when` (undefined sorts first); ties go to the later one. */
export function newestIndex<T>(items: readonly T[], when: (item: T) => number | undefined): number | undefined {
  let best: number | undefined;
  let bestTime = -Infinity;
  items.forEach((item, i) => {
    const t = when(item) ?? -Infinity;
    if (best === undefined || t >= bestTime) {
      best = i;
      bestTime = t;
    }
  });
  return best;
}

/**
 * A time field that becomes a sample: unix seconds, or undefined. Absent (null, undefined, "") is
 * quiet; a value that is present but not a time is logged at debug, since its sample is dropped.
 */
export function readTime(ctx: CollectorContext, field: string, value: unknown, where?: Labels): number | undefined {
  if (value == null || value === '') return undefined;
  const t = parseTimestamp(value, ctx.timeZone);
  if (t === undefined) ctx.debug(`${field} is not a time; sample dropped`, { field, value: preview(value), ...where });
  return t;
}

/**
 * Seconds from `start` to `end`, or undefined unless both are known. An end before the start is a
 * clock or data error, not a duration: dropped with a debug line rather than exported negative.
 */
export function span(ctx: CollectorContext, what: string, start: number | undefined, end: number | undefined, where?: Labels): number | undefined {
  if (start === undefined || end === undefined) return undefined;
  if (end < start) {
    ctx.debug(`${what} ends before it starts; duration dropped`, { start, end, ...where });
    return undefined;
  }
  return end - start;
}
