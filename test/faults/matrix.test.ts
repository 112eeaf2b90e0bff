/**
 * The whole fault matrix (`npm run test:faults`): every endpoint × every fault kind, run concurrently
 * on separate simulator + exporter pairs (vitest.faults.config.ts bounds how many at once).
 */
import { afterAll, describe, it } from 'vitest';
import { ALL_CASES, caseName, formatReport, runFaultCase, type CaseReport } from './matrix.js';

const reports: CaseReport[] = [];

afterAll(() => {
  const lines = reports.sort((a, b) => a.name.localeCompare(b.name)).map(formatReport);
  const slowest = Math.max(0, ...reports.map((r) => r.recoveredAfterMs));
  console.log(`fault matrix: ${reports.length}/${ALL_CASES.length} cases passed; slowest recovery ${(slowest / 1000).toFixed(1)} s\n${lines.join('\n')}`);
});

describe.concurrent('fault matrix', () => {
  it.each(ALL_CASES.map((c) => [caseName(c), c] as const))('%s', async (_name, c) => {
    reports.push(await runFaultCase(c));
  });
});
