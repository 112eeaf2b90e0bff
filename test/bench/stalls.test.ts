/** bench/history-run.ts stallsOf: which event-loop stalls held the slowest scrape up, the exporter's own or the machine's. */
import { describe, expect, it } from 'vitest';
import { stallsOf } from '../../bench/history-run.js';

describe('stallsOf', () => {
  it('tells own work (CPU for half the stall or more) from other work, and finds what the slowest scrape met', () => {
    const stalls = [
      { at: 1_000, ms: 240, cpuMs: 1 }, // another process had the core
      { at: 5_000, ms: 90, cpuMs: 80 }, // the exporter's own work
      { at: 5_100, ms: 30, cpuMs: 2 },
    ];
    const slow = [
      { at: 990, ms: 260 },
      { at: 4_990, ms: 300 },
    ];
    const client = [
      { at: 5_200, ms: 40 },
      { at: 9_000, ms: 500 },
    ];
    expect(stallsOf(stalls, slow, client)).toEqual({
      longestMs: 240,
      longestCpuMs: 1,
      longestOwnMs: 90,
      slowestScrapeMs: 300,
      slowestScrapeOwnMs: 90,
      slowestScrapeOtherMs: 30,
      slowestScrapeClientMs: 40,
      overMaxGoal: 2,
      // 300 less the 40 ms the scraper stalled; 260 less nothing.
      slowestAnswerMs: 260,
      // 300 less every stall of either process in it (90 + 30 + 40); 260 less the 240 ms one.
      longestWaitMs: 140,
    });
  });

  it('counts a moment in which both processes were held once, in the wait the exporter made', () => {
    const r = stallsOf([{ at: 0, ms: 100, cpuMs: 90 }], [{ at: 0, ms: 200 }], [{ at: 50, ms: 100 }]);
    // Held from 0 to 150: the scrape waited 50 ms with neither event loop held.
    expect(r.longestWaitMs).toBe(50);
  });

  it('reports zeros when nothing stalled and no scrape was slow', () => {
    expect(stallsOf([], [])).toEqual({ longestMs: 0, longestCpuMs: 0, longestOwnMs: 0, slowestScrapeMs: 0, slowestScrapeOwnMs: 0, slowestScrapeOtherMs: 0, slowestScrapeClientMs: 0, overMaxGoal: 0, slowestAnswerMs: 0, longestWaitMs: 0 });
  });
});
