/**
 * Writing window by window with the state file: windows aligned to 6 h of UTC days, a day whose
 * counts are missing a hole in cmdb_assets (the series ends before it and resumes after it), a run
 * again writing nothing that was written, a later run that reads a missing day writing that day's
 * samples only, and the chunks a target took skipped when a window is written again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StackHistory } from '../../src/backfill/history.js';
import { replayStack, type Line } from '../../src/backfill/replay.js';
import { BackfillState } from '../../src/backfill/state.js';
import { COVERAGE_METRIC } from '../../src/backfill/coverage.js';
import { missingFor, sourceOf, stepsOf, WINDOW_SECONDS, windowsOf, writeWindows, type FineSteps, type PassOptions, type Sink } from '../../src/backfill/write.js';
import type { MetricsRecord } from '../../src/api/schemas.js';
import { Sink as TextSink } from '../helpers/backfill.js';
import { testStack } from '../helpers/stack.js';

const DAY = 86_400;
const D0 = Date.parse('2026-11-01T00:00:00Z') / 1000;
const STACK = testStack({ name: 's', disabledEndpoints: ['connector', 'data_ingestion', 'actions', 'action_jobs', 'asset_change', 'user_change'] });
const dayText = (d: number) => new Date(d * 1000).toISOString().slice(0, 10);

function history(days: number[]): StackHistory {
  const map = new Map<number, MetricsRecord>(days.map((d, i) => [d, { assetCount: 1000 + i, userCount: 10 + i } as MetricsRecord]));
  return { days: map, connectorRows: undefined, ingestionRuns: undefined, actions: undefined, actionJobs: new Map(), changes: { asset: new Map(), user: new Map() }, missing: [] };
}

interface Written {
  readonly window: number;
  readonly source: string;
  readonly key: string;
  readonly t: number;
}

/** A sink that keeps what it is given, one window in flight like the real ones. */
class RecordingSink implements Sink {
  readonly kind = 'remote write' as const;
  readonly written: Written[] = [];
  readonly passes: Array<{ window: number; skip: string[] }> = [];
  open(window: number, pass: PassOptions) {
    this.passes.push({ window, skip: [...pass.skipChunks] });
    const lines: Written[] = [];
    return {
      add: (line: Line, stack: string, t: number) => void lines.push({ window, source: sourceOf(stack, line), key: line.key, t }),
      discard: () => undefined,
      finish: async () => {
        this.written.push(...lines);
        pass.acked([`${window}#0`], lines.length);
        return { samples: lines.length, bytes: 0, safe: Promise.resolve() };
      },
    };
  }
  async close() {}
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-backfill-write-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function write(h: StackHistory, missing: string[], from = D0, to = D0 + 3 * DAY - 1, stopping = new AbortController().signal, more: { ranges?: Array<[number, number]>; coverage?: boolean; fine?: FineSteps } = {}) {
  const state = BackfillState.open(dir, { test: 'x' });
  const sink = new RecordingSink();
  const coverageLabels = more.coverage ? { coverageLabels: { job: 'j', stack: 's' } } : {};
  const result = await writeWindows({
    stacks: [{ stack: 's', ranges: more.ranges ?? [[from, to]], replays: replayStack({ stack: STACK, history: h, step: 300, targetLabels: { job: 'j' } }), ...coverageLabels, ...(more.fine ? { fine: more.fine } : {}) }],
    sink,
    state,
    missingNow: new Set(missing),
    stopping,
    progressOut: new TextSink(),
  });
  return { sink, result, state };
}

describe('writing windows', () => {
  it('windows are 6 h, aligned to UTC days: none crosses midnight', () => {
    const ws = windowsOf(D0 + 5 * 3600, D0 + 2 * DAY + 1);
    expect(ws[0]).toBe(D0);
    expect(ws.every((w) => w % WINDOW_SECONDS === 0 && Math.floor(w / DAY) === Math.floor((w + WINDOW_SECONDS - 1) / DAY))).toBe(true);
    expect(ws).toHaveLength(9);
  });

  it("a missing day is a hole: cmdb_assets ends at the day before's last step and resumes at the next day's first", async () => {
    const { sink, state } = await write(history([D0, D0 + 2 * DAY]), [`s:counts/${dayText(D0 + DAY)}`]);
    const times = sink.written.filter((w) => w.key.startsWith('cmdb_assets{')).map((w) => w.t);
    expect(times.filter((t) => t >= D0 + DAY && t < D0 + 2 * DAY)).toEqual([]);
    expect(Math.max(...times.filter((t) => t < D0 + DAY))).toBe(D0 + DAY - 300);
    expect(Math.min(...times.filter((t) => t >= D0 + DAY))).toBe(D0 + 2 * DAY);
    expect(times).toHaveLength(2 * 288);
    // The windows of the missing day say so; the others do not.
    expect(state.window(D0 + DAY)?.missing).toEqual([`s:counts/${dayText(D0 + DAY)}`]);
    expect(state.window(D0)?.missing).toBeUndefined();
  });

  it('run again: windows written are not written again; a day read later is written alone into its windows', async () => {
    const day1 = `s:counts/${dayText(D0 + DAY)}`;
    const first = await write(history([D0, D0 + 2 * DAY]), [day1]);
    expect(first.state.totals().windows).toBe(12);
    const again = await write(history([D0, D0 + 2 * DAY]), [day1]);
    expect(again.sink.written).toEqual([]);
    expect(again.result.skipped).toBe(12);
    const later = await write(history([D0, D0 + DAY, D0 + 2 * DAY]), []);
    expect(new Set(later.sink.written.map((w) => w.source))).toEqual(new Set([day1]));
    expect(later.sink.written.every((w) => w.t >= D0 + DAY && w.t < D0 + 2 * DAY)).toBe(true);
    expect(later.sink.written.filter((w) => w.key.startsWith('cmdb_assets{'))).toHaveLength(288);
    expect(later.state.window(D0 + DAY)?.missing).toBeUndefined();
    expect((await write(history([D0, D0 + DAY, D0 + 2 * DAY]), [])).sink.written).toEqual([]);
  });

  it('a window stopped in its middle is written again without the chunks the target took', async () => {
    const state = BackfillState.open(dir, { test: 'x' });
    state.acked(D0 + WINDOW_SECONDS, ['s:counts/2026-11-01#0'], 72);
    const { sink } = await write(history([D0]), [], D0, D0 + DAY - 1);
    expect(sink.passes.find((p) => p.window === D0 + WINDOW_SECONDS)?.skip).toEqual(['s:counts/2026-11-01#0']);
    expect(sink.passes.find((p) => p.window === D0)?.skip).toEqual([]);
  });

  it('a stop before a window ends the writing there, and records nothing it did not write', async () => {
    const ctl = new AbortController();
    ctl.abort();
    const { sink, result, state } = await write(history([D0]), [], D0, D0 + DAY - 1, ctl.signal);
    expect(result.stopped).toBe(true);
    expect(sink.written).toEqual([]);
    expect(state.totals().windows).toBe(0);
  });

  it('a day missing concerns only the windows of that day', () => {
    const missing = new Set(['s:counts/2026-11-02', 's:connector-history']);
    expect(missingFor(D0, missing)).toEqual(['s:connector-history']);
    expect(missingFor(D0 + DAY + 3 * WINDOW_SECONDS, missing)).toEqual(['s:counts/2026-11-02', 's:connector-history']);
  });

  it('a gap filled at the scrape interval: its exact start (a millisecond after the staleness markers), then every scrape interval from it, a millisecond after each scrape due in it; the group\'s steps elsewhere', () => {
    const gap = [D0 + 600.701, D0 + 680] as [number, number];
    const ms = (t: number) => Math.round(t * 1000) / 1000;
    const steps = stepsOf([gap], 300, D0, D0 + 1200, { step: 15, ranges: [gap] });
    expect(steps.filter((s) => s.write).map((s) => ms(s.t - D0))).toEqual([600.701, 615.701, 630.701, 645.701, 660.701, 675.701]);
    expect(steps.filter((s) => !s.write).map((s) => ms(s.t - D0))).toEqual([0, 300, 600, 900, 1200]);
    // A finer step of the group adds its own; a gap not listed as fine keeps the group's steps.
    expect(stepsOf([gap], 10, D0 + 600, D0 + 700, { step: 15, ranges: [gap] }).filter((s) => s.write).map((s) => ms(s.t - D0))).toEqual([
      600.701, 610, 615.701, 620, 630, 630.701, 640, 645.701, 650, 660, 660.701, 670, 675.701, 680,
    ]);
    expect(stepsOf([gap], 300, D0, D0 + 1200, { step: 15, ranges: [] }).filter((s) => s.write).map((s) => ms(s.t - D0))).toEqual([600.701]);
    // Window by window, the same times: a window that starts inside the gap goes on from the gap's start.
    const halves = [...stepsOf([gap], 300, D0, D0 + 640, { step: 15, ranges: [gap] }), ...stepsOf([gap], 300, D0 + 641, D0 + 1200, { step: 15, ranges: [gap] })];
    expect(halves.filter((s) => s.write).map((s) => ms(s.t - D0))).toEqual([600.701, 615.701, 630.701, 645.701, 660.701, 675.701]);
  });

  it('a gap across two windows: a sample a millisecond after a scrape in the last second of the first window is written', async () => {
    const gap = [D0 + WINDOW_SECONDS - 30.999, D0 + WINDOW_SECONDS + 30] as [number, number];
    const { sink } = await write(history([D0]), [], D0, D0 + DAY - 1, undefined, { ranges: [gap], fine: { step: 15, ranges: [gap] } });
    const ms = (t: number) => Math.round((t - D0 - WINDOW_SECONDS) * 1000) / 1000;
    expect(sink.written.filter((w) => w.key.startsWith('cmdb_assets{')).map((w) => ms(w.t))).toEqual([-30.999, -15.999, -0.999, 0, 14.001, 29.001]);
  });

  it('a range shorter than a step gets samples from its first second: its start is a step too', async () => {
    expect(stepsOf([[D0 + 610, D0 + 690]], 300, D0, D0 + 1200)).toEqual([
      { t: D0, write: false },
      { t: D0 + 300, write: false },
      { t: D0 + 600, write: false },
      { t: D0 + 610, write: true },
      { t: D0 + 900, write: false },
      { t: D0 + 1200, write: false },
    ]);
    const crash = [D0 + DAY + 610, D0 + DAY + 690] as [number, number];
    const { sink } = await write(history([D0, D0 + DAY]), [], D0, D0 + 2 * DAY - 1, undefined, { ranges: [crash] });
    expect(sink.written.filter((w) => w.key.startsWith('cmdb_assets{')).map((w) => w.t)).toEqual([crash[0]]);
  });

  it('marks the stretches it wrote whole with their end, every minute; a stretch with a unit missing only once a later run writes it', async () => {
    const day1 = `s:counts/${dayText(D0 + DAY)}`;
    const marks = (w: { sink: RecordingSink }) => w.sink.written.filter((x) => x.key.startsWith(`${COVERAGE_METRIC}{`));
    const first = await write(history([D0, D0 + 2 * DAY]), [day1], D0, D0 + 3 * DAY - 1, undefined, { coverage: true });
    const firstMarks = marks(first);
    // Days 0 and 2, each window's stretch marked from its first second to its last, every minute.
    expect(firstMarks.filter((m) => m.t >= D0 + DAY && m.t < D0 + 2 * DAY)).toEqual([]);
    const window0 = firstMarks.filter((m) => m.window === D0).map((m) => m.t);
    expect(window0[0]).toBe(D0);
    expect(window0.at(-1)).toBe(D0 + WINDOW_SECONDS - 1);
    expect(window0).toHaveLength(WINDOW_SECONDS / 60 + 1);
    expect(firstMarks.find((m) => m.window === D0)?.key).toBe(`${COVERAGE_METRIC}{stack="s",job="j"}`);
    // The day read later: its marks now, and only its own.
    const later = await write(history([D0, D0 + DAY, D0 + 2 * DAY]), [], D0, D0 + 3 * DAY - 1, undefined, { coverage: true });
    const laterMarks = marks(later);
    expect(laterMarks.length).toBe(4 * (WINDOW_SECONDS / 60 + 1));
    expect(laterMarks.every((m) => m.t >= D0 + DAY && m.t < D0 + 2 * DAY)).toBe(true);
  });
});

