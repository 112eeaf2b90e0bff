/**
 * The layering in eslint.config.js is a checked rule: an import that points up fails lint. Each case
 * lints a one-line file as if it stood at `file` and expects the layering error; the allowed cases
 * prove the rules do not forbid the imports the design relies on.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: new URL('../..', import.meta.url).pathname });

async function layeringErrors(file: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${source}\nexport {};\n`, { filePath: file });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('eslint layering rules', () => {
  it.each([
    ['src/collectors/x.ts', "import { request } from 'undici';", 'collectors are pure'],
    ['src/collectors/x.ts', "import { readFileSync } from 'node:fs';", 'collectors are pure'],
    ['src/collectors/x.ts', "import { CmdbClient } from '../cmdb/client.js';", 'collectors are pure'],
    ['src/cmdb/x.ts', "import { Scheduler } from '../scheduler/scheduler.js';", 'the CMDB client knows nothing'],
    ['src/cmdb/x.ts', "import { SnapshotStore } from '../store/snapshot-store.js';", 'the CMDB client knows nothing'],
    ['src/cmdb/x.ts', "import { createHttpApp } from '../server/http.js';", 'the CMDB client knows nothing'],
    ['src/config/x.ts', "import { CmdbClient } from '../cmdb/client.js';", 'the configuration'],
    ['src/config/x.ts', "import { createLogger } from '../logger.js';", 'the configuration'],
    ['src/api/x.ts', "import { loadConfig } from '../config/load.js';", 'the bottom layer'],
    ['src/secrets.ts', "import { createLogger } from './logger.js';", 'the bottom layer'],
    ['src/store/x.ts', "import { StackPoller } from '../scheduler/stack-poller.js';", 'the store holds samples'],
    ['src/store/x.ts', "import { Exposition } from '../exposition/exposition.js';", 'the store holds samples'],
    ['src/exposition/x.ts', "import { StackPoller } from '../scheduler/stack-poller.js';", 'the exposition renders the store'],
    ['src/exposition/x.ts', "import { createHttpApp } from '../server/http.js';", 'the exposition renders the store'],
    ['src/scheduler/x.ts', "import { Exposition } from '../exposition/exposition.js';", 'the scheduler does not serve'],
    ['src/scheduler/x.ts', "import { createHttpApp } from '../server/http.js';", 'the scheduler does not serve'],
    ['src/simulator/x.ts', "import { CmdbClient } from '../cmdb/client.js';", 'the simulator is a separate program'],
    ['src/metrics/x.ts', "import { COLLECTORS } from '../collectors/index.js';", 'the metric catalogue'],
    ['src/persist/x.ts', "import { SnapshotStore } from '../store/snapshot-store.js';", 'the persistence module reads and writes files'],
    ['src/persist/x.ts', "import { CmdbClient } from '../cmdb/client.js';", 'the persistence module reads and writes files'],
    ['src/persist/x.ts', "import { stackParts } from '../stack-state.js';", 'the persistence module reads and writes files'],
    ['src/store/x.ts', "import { Storage } from '../persist/storage.js';", 'the store holds samples'],
    ['src/cmdb/x.ts', "import { jsonPieces } from '../persist/json-pieces.js';", 'the CMDB client knows nothing'],
    ['src/scheduler/x.ts', "import { startingPoint } from '../stack-state.js';", 'the scheduler does not serve'],
    ['src/collectors/x.ts', "import { Storage } from '../persist/storage.js';", 'collectors are pure'],
    ['src/backfill/x.ts', "import { Scheduler } from '../scheduler/scheduler.js';", 'the backfill reads through the readers'],
    ['src/backfill/x.ts', "import { CmdbClient } from '../cmdb/client.js';", 'the backfill reads through the readers'],
    ['src/cmdb/client.ts', "import { StackReaders } from './readers/index.js';", 'the request pipeline knows nothing of the readers'],
    ['src/cmdb/transport.ts', "import { openRoad } from './road.js';", 'the request pipeline knows nothing of the readers'],
    ['src/cmdb/readers/x.ts', "import { openRoad } from '../road.js';", 'a reader reads through the client'],
    ['src/cmdb/readers/x.ts', "import { Scheduler } from '../../scheduler/scheduler.js';", 'the CMDB client knows nothing'],
    ['src/cmdb/policy.ts', "import { Transport } from './transport.js';", 'the policy is a pure function'],
    ['src/cmdb/policy.ts', "import { request } from 'undici';", 'the policy is a pure function'],
    ['src/cmdb/policy.ts', "import { createLogger } from '../logger.js';", 'the policy is a pure function'],
    ['src/logger.ts', "import { CmdbClient } from './cmdb/client.js';", 'the logger and the shard rule'],
    ['src/shard.ts', "import { createInstruments } from './metrics/instruments.js';", 'the logger and the shard rule'],
    ['src/signals.ts', "import { createLogger } from './logger.js';", 'the bottom layer'],
    ['src/healthcheck.ts', "import { VERSION } from './version.js';", 'the health check is a separate program'],
    ['src/server/x.ts', "import { runBackfill } from '../backfill/command.js';", 'the server reads what others gathered'],
    ['src/stacks.ts', "import { start } from './app.js';", 'the stacks sit below the composition root'],
    ['src/app.ts', "import { main } from './main.js';", 'the composition root sits below the command line'],
  ])('%s: %s fails (%s)', async (file, source, why) => {
    const errors = await layeringErrors(file, source);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`layering: ${why}`);
  });

  it.each([
    ['src/collectors/x.ts', "import { CATALOGUE } from '../metrics/catalogue.js';"],
    ['src/cmdb/x.ts', "import { ENDPOINT_TABLE } from '../api/endpoints.js';"],
    ['src/config/x.ts', "import { DATA_ENDPOINTS } from '../api/endpoints.js';"],
    ['src/scheduler/x.ts', "import { COLLECTORS } from '../collectors/index.js';"],
    ['src/server/x.ts', "import type { EndpointStatus } from '../scheduler/endpoint-runner.js';"],
    ['src/server/x.ts', "import type { ScrapeResponse } from '../exposition/responses.js';"],
    ['src/exposition/x.ts', "import type { SnapshotStore } from '../store/snapshot-store.js';"],
    ['src/exposition/x.ts', "import type { SelfRegistries } from '../metrics/instruments.js';"],
    ['src/stacks.ts', "import { CmdbClient } from './cmdb/client.js';"],
    ['src/stack-state.ts', "import { Storage } from './persist/storage.js';"],
    ['src/stack-state.ts', "import { SnapshotStore } from './store/snapshot-store.js';"],
    ['src/persist/x.ts', "import type { StackConfig } from '../config/types.js';"],
    ['src/persist/x.ts', "import { readFile } from 'node:fs/promises';"],
    ['src/backfill/x.ts', "import { openRoad } from '../cmdb/road.js';"],
    ['src/backfill/x.ts', "import type { StackReaders } from '../cmdb/readers/index.js';"],
    ['src/cmdb/road.ts', "import { StackReaders } from './readers/index.js';"],
    ['src/cmdb/readers/x.ts', "import type { CmdbClient } from '../client.js';"],
    ['src/cmdb/policy.ts', "import { backoffDelayMs } from './backoff.js';"],
    ['src/cmdb/policy.ts', "import { retryAfterMs } from '../time.js';"],
    ['src/cmdb/policy.ts', "import type { RetryConfig } from '../config/types.js';"],
  ])('%s: %s is allowed', async (file, source) => {
    expect(await layeringErrors(file, source)).toEqual([]);
  });
});
