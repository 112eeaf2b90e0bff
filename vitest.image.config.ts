import { defineConfig } from 'vitest/config';

// The container image, built with buildah and run (`npm run test:image`, as root: docs/deployment.md,
// "The image test"). One file: the build, then its containers.
export default defineConfig({
  test: {
    include: ['test/image/**/*.test.ts'],
    environment: 'node',
    testTimeout: 180_000,
    // A bound against a hang, not a measure of speed: the first run makes the base (debootstrap) and
    // every run builds the image (npm ci in two stages, tsc, vfs copies of the file system).
    hookTimeout: 3_600_000,
  },
});
