// Flat config: typescript-eslint's recommended rules, without type-aware rules so that lint stays
// fast on two cores; `npm run typecheck` covers the type system.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** What a layer below the client must not import: the client and everything above it. */
const UPPER = ['**/cmdb/**', '**/scheduler/**', '**/store/**', '**/exposition/**', '**/server/**', '**/persist/**', '**/stacks.js', '**/stack-state.js', '**/app.js'];
/**
 * The persistence module (--storage.path) and the code that turns components into its parts: no
 * component imports them; each keeps its state in a versioned form of its own (src/stack-state.ts).
 */
const STATE = ['**/persist/**', '**/stack-state.js'];
/** Input and output: network, files, processes, timers. */
const IO = ['undici', 'node:*', 'express', 'node-cron', 'pino', 'prom-client'];
const BOTTOM = [...UPPER, '**/config/**', '**/metrics/**', '**/collectors/**', '**/logger.js', '**/simulator/**'];

/** What the client layer must not import: scheduling, storing, serving, mapping, the simulator. */
const CMDB_UPPER = ['**/scheduler/**', '**/store/**', '**/exposition/**', '**/server/**', '**/collectors/**', '**/stacks.js', '**/app.js', '**/simulator/**', ...STATE];

/** One pattern per entry; an array is one group (so that a `!` in it can let one file through). */
function patternsOf(why, paths, packages = []) {
  return [...paths, ...packages].map((pattern) => ({ group: Array.isArray(pattern) ? pattern : [pattern], message: `layering: ${why}` }));
}

/**
 * One rule per set of files. A file matched by two blocks gets the later block's rule only (flat
 * config replaces a rule's options, it does not merge them): a block for part of a layer repeats
 * the layer's own patterns (`extra`).
 */
function layer(files, why, paths, packages = [], extra = [], ignores = []) {
  const patterns = [...extra, ...patternsOf(why, paths, packages)];
  return [{ files, ...(ignores.length > 0 ? { ignores } : {}), rules: { 'no-restricted-imports': ['error', { patterns }] } }];
}

const CMDB_WHY = 'the CMDB client knows nothing of scheduling, storing or serving';

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
  ...layer(['src/api/**', 'src/errors.ts', 'src/secrets.ts', 'src/time.ts', 'src/signals.ts', 'src/attention.ts', 'src/json-list.ts'], 'the bottom layer imports nothing of the exporter but itself', BOTTOM, IO),
  // version.ts reads package.json once, executables.ts looks a program up on PATH: file reads, nothing else.
  ...layer(['src/version.ts', 'src/executables.ts'], 'the bottom layer imports nothing of the exporter but itself', BOTTOM),
  // The container's health check is a program of its own: it asks the exporter over HTTP.
  ...layer(['src/healthcheck.ts'], 'the health check is a separate program that imports nothing of the exporter', ['../**', './**']),
  ...layer(['src/config/**'], 'the configuration reads files and environment only', [...UPPER, '**/metrics/**', '**/logger.js', '**/simulator/**'], [
    'undici',
  ]),
  ...layer(['src/metrics/**'], 'the metric catalogue and instruments sit below the client and collectors', [...UPPER, '**/config/**', '**/collectors/**', '**/simulator/**'], [
    'undici',
    'node:*',
  ]),
  ...layer(['src/logger.ts', 'src/shard.ts'], 'the logger and the shard rule sit below the client: configuration types, the bottom layer', [...UPPER, '**/metrics/**', '**/collectors/**', '**/simulator/**', '**/backfill/**'], ['undici']),
  ...layer(['src/collectors/**'], 'collectors are pure mappings: no I/O, no client, no clock', [...UPPER, '**/config/**', '**/logger.js', '**/simulator/**'], IO),
  ...layer(['src/cmdb/**'], CMDB_WHY, CMDB_UPPER),
  // The road inside the client layer: the pipeline (client, transport, budget, pauses) below the
  // readers, the readers below road.ts, which assembles them. The policy is a pure function.
  ...layer(['src/cmdb/*.ts'], 'the request pipeline knows nothing of the readers above it', ['./readers/**', './road.js'], [], patternsOf(CMDB_WHY, CMDB_UPPER), ['src/cmdb/road.ts', 'src/cmdb/policy.ts']),
  ...layer(['src/cmdb/readers/**'], 'a reader reads through the client; it does not assemble the road', ['../road.js'], [], patternsOf(CMDB_WHY, CMDB_UPPER)),
  ...layer(
    ['src/cmdb/policy.ts'],
    'the policy is a pure function of what it is given',
    [['./*', '!./backoff.js'], '**/metrics/**', '**/logger.js', '**/signals.js', '**/secrets.js', '**/readers/**'],
    IO,
    patternsOf(CMDB_WHY, CMDB_UPPER),
  ),
  ...layer(['src/store/**'], 'the store holds samples; it does not fetch, schedule or render', ['**/cmdb/**', '**/scheduler/**', '**/exposition/**', '**/server/**', '**/stacks.js', '**/app.js', '**/simulator/**', ...STATE]),
  // The exposition renders what the store applied and the instruments counted; the server serves it.
  ...layer(['src/exposition/**'], 'the exposition renders the store and the instruments; it does not fetch, schedule or serve', ['**/cmdb/**', '**/scheduler/**', '**/server/**', '**/stacks.js', '**/app.js', '**/simulator/**', ...STATE]),
  ...layer(['src/scheduler/**'], 'the scheduler does not serve', ['**/exposition/**', '**/server/**', '**/stacks.js', '**/app.js', '**/simulator/**', ...STATE]),
  ...layer(['src/server/**'], 'the server reads what others gathered', ['**/cmdb/**', '**/stacks.js', '**/app.js', '**/simulator/**', '**/backfill/**', ...STATE]),
  // State kept across restarts: files, the configuration, the logger and the metrics; no component
  // (src/stack-state.ts turns the components' states into its parts), and no component imports it.
  ...layer(['src/persist/**'], 'the persistence module reads and writes files; it knows no component', [
    '**/cmdb/**',
    '**/scheduler/**',
    '**/store/**',
    '**/exposition/**',
    '**/server/**',
    '**/collectors/**',
    '**/stacks.js',
    '**/stack-state.js',
    '**/app.js',
    '**/simulator/**',
    '**/backfill/**',
  ], ['undici', 'express', 'node-cron']),
  ...layer(['src/backfill/**'], 'the backfill reads through the readers and replays the collectors: it does not schedule, serve or run stacks', [
    '**/scheduler/**',
    '**/server/**',
    '**/stacks.js',
    '**/app.js',
    '**/main.js',
    '**/simulator/**',
    '**/cmdb/client.js',
    '**/cmdb/transport.js',
  ]),
  ...layer(['src/stacks.ts'], 'the stacks sit below the composition root', ['./app.js', './main.js', './simulator/**', './backfill/**']),
  ...layer(['src/app.ts'], 'the composition root sits below the command line', ['./main.js', './simulator/**', './backfill/**']),
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
