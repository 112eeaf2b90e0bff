/**
 * A representative handful of the fault matrix (test/faults/matrix.ts) in `npm test`: an HTML 503,
 * truncated JSON, a hang, a 401 loop and a token-endpoint fault. The whole matrix runs in
 * `npm run test:faults`. Each case checks its properties itself (runFaultCase), recovery included:
 * the first poll after the fault is removed brings every affected endpoint back up, whatever the
 * machine's speed (it was "within 13 s of wall time").
 */
import { describe, expect, it } from 'vitest';
import { caseName, FAST_SUBSET, runFaultCase } from '../faults/matrix.js';

describe.concurrent('fault matrix, fast subset', () => {
  it.each(FAST_SUBSET.map((c) => [caseName(c), c] as const))('%s', async (_name, c) => {
    const report = await runFaultCase(c);
    expect(report.requests).toBeGreaterThan(0);
  });
});
