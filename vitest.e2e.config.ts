import { basename } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The files that take longest (measured side by side: waits on real time, a backfill's CPU), in
 * that order: they start first so that the short ones fill the workers around them and the suite
 * ends with its longest file, not after it. Order only: a file not named here runs after them.
 */
const LONGEST_FIRST = [
  'landing.test.ts',
  'disk.test.ts',
  'backfill-resume.test.ts',
  'alertmanager.test.ts',
  'backfill.test.ts',
  'restart.test.ts',
  'scan-stale.test.ts',
  'queries.test.ts',
  'backfill-crash-gap.test.ts',
  'demo-alert.test.ts',
  'backfill-shared-client.test.ts',
  'prometheus.test.ts',
  'restart-scan.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.indexOf(basename(f.moduleId));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    return [...files].sort((a, b) => rank(a) - rank(b));
  }
}

// End-to-end tests: the built daemon, the simulator, a real Prometheus and headless Chromium.
// Run with `npm run test:e2e` (builds first). Files run side by side: each starts its own processes
// on ports they pick (port 0, or a free port with a retry when taken) in temporary directories of
// its own, and most of a file's time is spent waiting on real time, not on the CPU. Four at once on
// two cores: the suite takes ~a third of its one-at-a-time time (see CONTRIBUTING.md, "Test budgets").
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    environment: 'node',
    testTimeout: 180_000,
    // A bound against a hang: the waits inside a hook are bounded by progress (waitUntilReady goes
    // on while endpoints keep finishing their first poll), and 200 stacks' first polls on a loaded
    // machine take minutes of CPU.
    hookTimeout: 420_000,
    fileParallelism: true,
    maxWorkers: Number(process.env.E2E_WORKERS ?? 4),
    sequence: { sequencer: LongestFirst },
  },
});
