/**
 * A representative handful of the fault matrix (test/faults/matrix.ts) in `npm test`: an HTML 503,
 * truncated JSON, a hang, a 401 loop and a token-endpoint fault. The whole matrix runs in
 * `npm run test:faults`.
 */
import { describe, expect, it } from 'vitest';
import { caseName, FAST_SUBSET, runFaultCase } from '../faults/matrix.js';

describe.concurrent('fault matrix, fast subset', () => {
  it.each(FAST_SUBSET.map((c) => [caseName(c), c] as const))('%s', { timeout: 90_000 }, async (_name, c) => {
    const report = await runFaultCase(c);
    expect(report.recoveredAfterMs).toBeLessThanOrEqual(13_000);
  });
});
