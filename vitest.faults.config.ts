import { defineConfig } from 'vitest/config';

// The fault matrix and the soak test (`npm run test:faults`): real simulators and exporters on 10 s
// poll intervals. Each matrix case waits on the scheduler (~30 s), so many run at once in one
// worker; FAULTS_CONCURRENCY bounds how many (default 16: the whole matrix in ~6 minutes on 2 cores).
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 60_000,
    maxConcurrency: Number(process.env.FAULTS_CONCURRENCY ?? 16),
    fileParallelism: false,
  },
});
