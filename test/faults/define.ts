/**
 * Declares one share of the fault matrix as vitest cases. The matrix is split over several files so
 * that vitest runs them in separate worker processes (one event loop each); within a file the cases
 * run concurrently, up to `maxConcurrency` (vitest.faults.config.ts).
 */
import { afterAll, describe, it } from 'vitest';
import { ALL_CASES, caseName, formatReport, runFaultCase, type CaseReport } from './matrix.js';

export function defineMatrixShare(share: number, shares: number): void {
  const cases = ALL_CASES.filter((_, i) => i % shares === share);
  const reports: CaseReport[] = [];

  afterAll(() => {
    const lines = reports.sort((a, b) => a.name.localeCompare(b.name)).map(formatReport);
    const slowest = Math.max(0, ...reports.map((r) => r.recoveredAfterMs));
    console.log(
      `fault matrix share ${share + 1}/${shares}: ${reports.length}/${cases.length} cases passed; ` +
        `slowest recovery ${(slowest / 1000).toFixed(1)} s\n${lines.join('\n')}`,
    );
  });

  describe.concurrent(`fault matrix ${share + 1}/${shares}`, () => {
    it.each(cases.map((c) => [caseName(c), c] as const))('%s', async (_name, c) => {
      reports.push(await runFaultCase(c));
    });
  });
}
