import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The whole fault matrix and the soak test run in `npm run test:faults` (a fast subset is in test/integration),
    // the container image's build and run in `npm run test:image`.
    exclude: ['test/e2e/**', 'test/faults/**', 'test/image/**', 'node_modules/**'],
    environment: 'node',
    // A listener-leak warning fails the test it happened in.
    setupFiles: ['test/helpers/no-leak-warnings.ts'],
    // Bounds against a hang, not measures of speed: a test waits for events (a process up, a poll
    // done), and on a loaded 2-core machine starting the daemon through tsx alone takes 10–20 s
    // (at 20 s, two such starts in one test timed out). Performance is measured in bench/.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Two cores: more workers only add contention for the tests that start servers.
    maxWorkers: 2,
  },
});
