import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The whole fault matrix and the soak test run in `npm run test:faults` (a fast subset is in test/integration).
    exclude: ['test/e2e/**', 'test/faults/**', 'node_modules/**'],
    environment: 'node',
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Two cores: more workers only add contention for the tests that start servers.
    maxWorkers: 2,
  },
});
