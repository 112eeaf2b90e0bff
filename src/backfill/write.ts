/**
 * Writing a backfill window by window into a sink (blocks.ts, remote-write-sink.ts). Windows are
 * WINDOW_SECONDS long and aligned to 00:00, 06:00, 12:00 and 18:00 UTC: no block crosses midnight
 * UTC, as Mimir's and Thanos' uploads require (docs/backfill.md, "Blocks", says why 6 h).
 *
 * Every window of the stacks' ranges is replayed, in time order (the replay's state memory needs
 * every step); what is written of it depends on the state file:
 *
 * - never written, or stopped in its middle: every line, but the chunks the target already took;
 * - written while units were missing that this run has read: the lines of those units only;
 * - written: nothing.
 *
 * The sink writes one window while the next is replayed; a window is done in the state once the
 * sink says its samples are safe. A stop ends the loop between windows, the one in the sink finished.
 */
import { coverageLine, coverageTimes } from './coverage.js';
import type { Line, GroupReplay } from './replay.js';
import type { BackfillState } from './state.js';
import { Progress } from './progress.js';

export const WINDOW_SECONDS = 6 * 3600;
const DAY = 86_400;

/** One stack's replays and the ranges of it to write (unix seconds, inclusive). */
export interface StackReplay {
  readonly stack: string;
  readonly ranges: ReadonlyArray<readonly [number, number]>;
  readonly replays: readonly GroupReplay[];
  /** The labels of its coverage mark (coverage.ts): the target's and the stack; none without. */
  readonly coverageLabels?: Readonly<Record<string, string>>;
  /** Ranges written at a step of their own as well as each group's (--fill-gaps: a gap at the scrape interval, fill.ts). */
  readonly fine?: FineSteps;
}

/** Ranges (a subset of a stack's) written every `step` from their start too (fill.ts). */
export interface FineSteps {
  readonly step: number;
  readonly ranges: ReadonlyArray<readonly [number, number]>;
}

export interface PassOptions {
  /** Chunks (remote write) the target took in an earlier run: not sent again. */
  readonly skipChunks: ReadonlySet<string>;
  /** The target took these chunks (remote write): kept in the state at once. */
  readonly acked: (chunks: readonly string[], samples: number) => void;
}

export interface SinkWindow {
  /** One sample of `stack`'s line at `t` (unix seconds); `sourceOf` names its unit (`stack:key`) when asked. */
  add(line: Line, stack: string, t: number): void;
  /**
   * Writes what was added. Resolves when the sink can take the next window, with `safe` settling
   * once the window's samples are in the target (rejecting when they could not be written).
   */
  finish(): Promise<{ samples: number; bytes: number; safe: Promise<void> }>;
  /** Drops what was added (a stop before finish). */
  discard(): void;
}

export interface Sink {
  readonly kind: 'blocks' | 'remote write';
  open(start: number, pass: PassOptions): SinkWindow;
  /** Ends what is in flight (a stop ends it sooner); waits for it. */
  close(stopping: boolean): Promise<void>;
}

export interface WriteResult {
  /** Samples written by this run. */
  samples: number;
  bytes: number;
  /** Windows skipped as written before. */
  skipped: number;
  stopped: boolean;
  generateSeconds: number;
}

/** The windows (their starts) that [from, to] touches. */
export function windowsOf(from: number, to: number): number[] {
  const out: number[] = [];
  for (let w = Math.floor(from / WINDOW_SECONDS) * WINDOW_SECONDS; w <= to; w += WINDOW_SECONDS) out.push(w);
  return out;
}

const inRanges = (ranges: StackReplay['ranges'], t: number) => ranges.some(([a, b]) => t >= a && t <= b);

/**
 * The steps of a replay in [from, to] (unix seconds): every multiple of `step`, and each range's
 * start, so that a range shorter than a step (a crash of a minute) still gets samples from its
 * first second (its first millisecond for a gap: gaps.ts); inside the `fine` ranges every
 * `fine.step` from their start too, a millisecond after each scrape due in the gap (fill.ts).
 * `write` says whether the step is inside a range; the others only move the replay on.
 */
export function stepsOf(ranges: StackReplay['ranges'], step: number, from: number, to: number, fine?: FineSteps): Array<{ t: number; write: boolean }> {
  const times = new Set<number>();
  for (const [a] of ranges) if (a >= from && a <= to) times.add(a);
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) times.add(t);
  for (const [a, b] of fine?.ranges ?? []) {
    // In whole milliseconds, as the samples are written: no drift over a long gap.
    const [start, last, every] = [Math.round(a * 1000), Math.round(Math.min(b, to) * 1000), Math.round((fine as FineSteps).step * 1000)];
    for (let t = start + Math.max(0, Math.ceil((from * 1000 - start) / every)) * every; t <= last; t += every) times.add(t / 1000);
  }
  return [...times].sort((x, y) => x - y).map((t) => ({ t, write: inRanges(ranges, t) }));
}
const touches = (ranges: StackReplay['ranges'], from: number, to: number) => ranges.some(([a, b]) => a <= to && b >= from);
const DAY_KEY = /^([^:]*):counts\/(\d{4}-\d{2}-\d{2})$/;

/** The missing units that concern window `w`: a day's counts only within that day. */
export function missingFor(w: number, missing: ReadonlySet<string>): string[] {
  return [...missing].filter((key) => {
    const day = DAY_KEY.exec(key);
    if (!day) return true;
    const start = Date.parse(`${day[2]}T00:00:00Z`) / 1000;
    return start <= w + WINDOW_SECONDS - 1 && start + DAY > w;
  });
}

/**
 * Which lines a window's pass writes: all (`undefined`), those of the units listed, or none. A
 * unit counts as listed when its parent is: once the Action list is read, every Action's jobs are
 * new (none of them was written while the list was missing).
 */
export function passFor(state: BackfillState, w: number, missingNow: ReadonlySet<string>): ReadonlySet<string> | undefined | 'none' {
  const rec = state.window(w);
  if (!rec?.done) return undefined;
  const fill = new Set((rec.missing ?? []).filter((key) => !missingNow.has(key)));
  return fill.size === 0 ? 'none' : fill;
}

function wanted(fill: ReadonlySet<string>, source: string): boolean {
  if (fill.has(source)) return true;
  const m = /^([^:]*):action-jobs\//.exec(source);
  return m !== null && fill.has(`${m[1]}:actions`);
}

/**
 * Does this pass leave the stack complete in the window for the first time? A full pass with none
 * of its units missing; a pass for units read later that wrote the last of its missing ones.
 */
function covers(stack: string, pass: ReadonlySet<string> | undefined, missing: readonly string[]): boolean {
  const own = (key: string) => key.startsWith(`${stack}:`);
  if (missing.some(own)) return false;
  return pass === undefined || [...pass].some(own);
}

/** The coverage marks of the stack's ranges within window `w` (coverage.ts). */
function addCoverage(window: SinkWindow, s: StackReplay, w: number, end: number): void {
  if (!s.coverageLabels) return;
  for (const [a, b] of s.ranges) {
    const from = Math.max(a, w);
    const to = Math.min(b, end);
    if (from > to) continue;
    const line = coverageLine(s.coverageLabels, to);
    for (const t of coverageTimes(from, to)) window.add(line, s.stack, t);
  }
}

/** The unit a line comes from, qualified with its stack: `prod:counts/2026-11-03`. */
export const sourceOf = (stack: string, line: Line) => `${stack}:${line.source}`;

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function writeWindows(opts: {
  readonly stacks: readonly StackReplay[];
  readonly sink: Sink;
  readonly state: BackfillState;
  /** Units without an answer after this run's reading, stack-qualified. */
  readonly missingNow: ReadonlySet<string>;
  readonly stopping: AbortSignal;
  readonly progressOut: { isTTY?: boolean; write(text: string): unknown };
}): Promise<WriteResult> {
  const { stacks, sink, state, missingNow, stopping } = opts;
  const from = Math.min(...stacks.flatMap((s) => s.ranges.map((r) => r[0])));
  const to = Math.max(...stacks.flatMap((s) => s.ranges.map((r) => r[1])));
  const result: WriteResult = { samples: 0, bytes: 0, skipped: 0, stopped: false, generateSeconds: 0 };
  const progress = new Progress('writing', to - from + 1, 'seconds of history', opts.progressOut);
  // Remote write keeps its samples in the state batch by batch (acked); blocks when the window is done.
  const stateSamples = (n: number) => (sink.kind === 'blocks' ? n : 0);
  let pending: { start: number; samples: number; bytes: number; safe: Promise<void> } | undefined;
  const settle = async () => {
    if (!pending) return;
    const p = pending;
    pending = undefined;
    await p.safe;
    state.done(p.start, missingFor(p.start, missingNow), stateSamples(p.samples));
    result.samples += p.samples;
    result.bytes += p.bytes;
  };
  try {
    for (const w of windowsOf(from, to)) {
      // A turn of the event loop per window: signals are handled here.
      await turn();
      if (stopping.aborted) {
        result.stopped = true;
        break;
      }
      const end = w + WINDOW_SECONDS - 1;
      // Its last millisecond: a gap's samples fall a millisecond after a scrape (stepsOf), any millisecond.
      const last = w + WINDOW_SECONDS - 0.001;
      const active = stacks.some((s) => touches(s.ranges, w, last));
      const pass = active ? passFor(state, w, missingNow) : 'none';
      const started = process.hrtime.bigint();
      const rec = state.window(w);
      let window: SinkWindow | undefined;
      if (pass !== 'none') {
        window = sink.open(w, { skipChunks: new Set(rec?.acked ?? []), acked: (chunks, samples) => state.acked(w, chunks, samples) });
      } else if (active) result.skipped += 1;
      try {
        for (const s of stacks) {
          for (const replay of s.replays) {
            for (const { t, write } of stepsOf(s.ranges, replay.step, Math.max(w, from), Math.min(last, to), s.fine)) {
              if (!window || !write) {
                replay.linesAt(t);
                continue;
              }
              const sink = window;
              // A full pass writes every line; a pass for units read later only theirs.
              if (pass === undefined) replay.linesAt(t, (line) => sink.add(line, s.stack, t));
              else replay.linesAt(t, (line) => wanted(pass as ReadonlySet<string>, sourceOf(s.stack, line)) && sink.add(line, s.stack, t));
            }
          }
          if (window && pass !== 'none' && covers(s.stack, pass, missingFor(w, missingNow))) addCoverage(window, s, w, end);
        }
      } catch (e) {
        window?.discard();
        throw e;
      }
      if (window) {
        const written = await window.finish();
        result.generateSeconds += Number(process.hrtime.bigint() - started) / 1e9;
        // The window before must be safe before this one is handed over: one in flight at a time.
        // Handled when awaited; until then a failure must not count as unhandled.
        written.safe.catch(() => undefined);
        await settle();
        pending = { start: w, samples: written.samples, bytes: written.bytes, safe: written.safe };
      }
      progress.set(Math.min(to, end) - from + 1);
    }
    await settle();
  } finally {
    await sink.close(stopping.aborted);
    if (pending) {
      // A stop or a failure: the window in the sink is finished (and kept) or dropped, never half-recorded.
      await settle().catch(() => undefined);
    }
  }
  if (!result.stopped) progress.finish();
  return result;
}
