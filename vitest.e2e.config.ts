import { defineConfig } from 'vitest/config';

// End-to-end tests: the built daemon, the simulator, a real Prometheus and headless Chromium.
// Run with `npm run test:e2e` (builds first). One file at a time: they start real processes.
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    environment: 'node',
    testTimeout: 180_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
