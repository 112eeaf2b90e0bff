// Flat config: typescript-eslint's recommended rules, without type-aware rules so that lint stays
// fast on two cores; `npm run typecheck` covers the type system.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** What a layer below the client must not import: the client and everything above it. */
const UPPER = ['**/cmdb/**', '**/scheduler/**', '**/store/**', '**/server/**', '**/persist/**', '**/stacks.js', '**/stack-state.js', '**/app.js'];
/**
 * The persistence module (--storage.path) and the code that turns components into its parts: no
 * component imports them; each keeps its state in a versioned form of its own (src/stack-state.ts).
 */
const STATE = ['**/persist/**', '**/stack-state.js'];
/** Input and output: network, files, processes, timers. */
const IO = ['undici', 'node:*', 'express', 'node-cron', 'pino', 'prom-client'];
const BOTTOM = [...UPPER, '**/config/**', '**/metrics/**', '**/collectors/**', '**/logger.js', '**/simulator/**'];

function layer(files, why, paths, packages = []) {
  const patterns = [...paths, ...packages].map((pattern) => ({ group: [pattern], message: `layering: ${why}` }));
  return [{ files, rules: { 'no-restricted-imports': ['error', { patterns }] } }];
}

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'test/golden/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': ['error', { allow: ['error', 'warn'] }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'prefer-const': 'error',
    },
  },
  // Layers: dependencies point down only (README "Layout", CONTRIBUTING.md). Each block names what
  // a layer must not import; test/lint/layers.test.ts proves every rule fails on a violation.
  ...layer(['src/api/**', 'src/errors.ts', 'src/secrets.ts', 'src/time.ts', 'src/json-list.ts'], 'the bottom layer imports nothing of the exporter but itself', BOTTOM, IO),
  // version.ts reads package.json once: a file read, nothing else.
  ...layer(['src/version.ts'], 'the bottom layer imports nothing of the exporter but itself', BOTTOM),
  ...layer(['src/config/**'], 'the configuration reads files and environment only', [...UPPER, '**/metrics/**', '**/logger.js', '**/simulator/**'], [
    'undici',
  ]),
  ...layer(['src/metrics/**'], 'the metric catalogue and instruments sit below the client and collectors', [...UPPER, '**/config/**', '**/collectors/**', '**/simulator/**'], [
    'undici',
    'node:*',
  ]),
  ...layer(['src/collectors/**'], 'collectors are pure mappings: no I/O, no client, no clock', [...UPPER, '**/config/**', '**/logger.js', '**/simulator/**'], IO),
  ...layer(['src/cmdb/**'], 'the CMDB client knows nothing of scheduling, storing or serving', [
    '**/scheduler/**',
    '**/store/**',
    '**/server/**',
    '**/collectors/**',
    '**/stacks.js',
    '**/app.js',
    '**/simulator/**',
    ...STATE,
  ]),
  ...layer(['src/store/**'], 'the store holds samples; it does not fetch or schedule', ['**/cmdb/**', '**/scheduler/**', '**/server/**', '**/stacks.js', '**/app.js', '**/simulator/**', ...STATE]),
  ...layer(['src/scheduler/**'], 'the scheduler does not serve', ['**/server/**', '**/stacks.js', '**/app.js', '**/simulator/**', ...STATE]),
  ...layer(['src/server/**'], 'the server reads what others gathered', ['**/cmdb/**', '**/stacks.js', '**/app.js', '**/simulator/**', ...STATE]),
  // State kept across restarts: files, the configuration, the logger and the metrics; no component
  // (src/stack-state.ts turns the components' states into its parts), and no component imports it.
  ...layer(['src/persist/**'], 'the persistence module reads and writes files; it knows no component', [
    '**/cmdb/**',
    '**/scheduler/**',
    '**/store/**',
    '**/server/**',
    '**/collectors/**',
    '**/stacks.js',
    '**/stack-state.js',
    '**/app.js',
    '**/simulator/**',
  ], ['undici', 'express', 'node-cron']),
  ...layer(['src/simulator/**'], 'the simulator is a separate program that shares only the API vocabulary', [
    '../api/schemas.js',
    '**/cmdb/**',
    '**/config/**',
    '**/collectors/**',
    '**/scheduler/**',
    '**/store/**',
    '**/server/**',
    '**/metrics/**',
    '**/logger.js',
    '**/stacks.js',
    '**/app.js',
  ]),
  {
    files: ['src/main.ts', 'src/simulator/main.ts', 'scripts/**', 'test/**', 'bench/**'],
    rules: { 'no-console': 'off' },
  },
);
