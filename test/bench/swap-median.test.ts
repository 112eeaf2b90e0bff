import { describe, expect, it } from 'vitest';
import type { SwapFigures } from '../../bench/results.js';
import { medianSwap } from '../../bench/size-run.js';

const run = (block: number, wallMs = 1000): SwapFigures => ({
  data: { series: 10, wallMs, cpuMs: 1, maxLoopDelayMs: block },
  status: { series: 0, wallMs: 1, cpuMs: 1, maxLoopDelayMs: block / 10 },
  idleMaxLoopDelayMs: 1,
});

describe('medianSwap', () => {
  it('picks the whole run whose data change had the median longest block', () => {
    const runs = [run(40, 1), run(8, 2), run(12, 3)];
    expect(medianSwap(runs)).toBe(runs[2]);
  });

  it('takes the lower median of an even count, and the only run of one', () => {
    const runs = [run(30), run(10), run(20), run(40)];
    expect(medianSwap(runs)).toBe(runs[2]);
    const one = run(5);
    expect(medianSwap([one])).toBe(one);
  });

  it('refuses an empty list', () => {
    expect(() => medianSwap([])).toThrow(/no swap/);
  });
});
