import { defineConfig } from 'vitest/config';

// The fault matrix and the soak test (`npm run test:faults`): real simulators and exporters on 10 s
// poll intervals. Each matrix case mostly waits on the scheduler (~25 s), so several run at once:
// the matrix is split over two files (two worker processes, one per core) and FAULTS_CONCURRENCY
// bounds the cases at once per file (default 5: more starves the event loop of a worker and 2 s timeouts fire).
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    environment: 'node',
    // A listener-leak warning fails the test it happened in.
    setupFiles: ['test/helpers/no-leak-warnings.ts'],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    maxConcurrency: Number(process.env.FAULTS_CONCURRENCY ?? 5),
    maxWorkers: 2,
  },
});
