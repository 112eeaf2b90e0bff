/**
 * Builds a stack's road as src/stacks.ts does: its CmdbClient (token, spellings, pipeline) and its
 * readers, with a fresh registry, a captured logger and (optionally) a fake clock; with `enabled`,
 * its poll plan too. `client` is the readers (what the poller and the backfill read through), `cmdb`
 * the client under them (pauses, budget, token).
 */
import { afterEach } from 'vitest';
import type { CmdbClient, CmdbClientOptions } from '../../../src/cmdb/client.js';
import type { PlanSeen, PollPlan } from '../../../src/cmdb/plan.js';
import type { ConnectorHistoryReader, StackReaders } from '../../../src/cmdb/readers/index.js';
import { openRoad } from '../../../src/cmdb/road.js';
import type { DataEndpoint } from '../../../src/api/endpoints.js';
import { secretsOfStack } from '../../../src/config/redact.js';
import type { StackConfig } from '../../../src/config/types.js';
import { captureLog, type CapturedLog } from './log.js';
import { testMetrics, type TestMetrics } from './metrics.js';

export interface TestClient {
  client: StackReaders;
  cmdb: CmdbClient;
  /** The stack's poll plan, when `enabled` was given. */
  plan: PollPlan | undefined;
  metrics: TestMetrics;
  log: CapturedLog;
}

const open: Array<{ close(): unknown }> = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

export interface ExtraOptions extends Partial<Pick<CmdbClientOptions, 'clock' | 'random' | 'dispatcher' | 'requestsPerMinute' | 'budget' | 'carried' | 'tokenRenewalsPerRequest' | 'tokenFirstByteSeconds' | 'onToken'>> {
  /** Build the poll plan of these endpoints, with what was seen before. */
  readonly enabled?: readonly DataEndpoint[];
  readonly seen?: PlanSeen;
  /** The connector history reader to go on from (a reload's, or one restored: ConnectorHistoryReader.fromState). */
  readonly history?: ConnectorHistoryReader;
}

export function makeClient(stack: StackConfig, extra: ExtraOptions = {}): TestClient {
  const { enabled, seen, ...options } = extra;
  const metrics = testMetrics();
  const log = captureLog(stack.name);
  // As src/stacks.ts does before a client is made: the stack's secrets are known to the scrubber.
  for (const secret of secretsOfStack(stack)) log.scrubber.add(secret);
  const road = openRoad({ stack, instruments: metrics.instruments, logger: log.logger, scrubber: log.scrubber, ...options, ...(enabled ? { enabled } : {}), ...(seen ? { seen } : {}) });
  open.push(road);
  return { client: road.readers, cmdb: road.client, plan: road.plan, metrics, log };
}

/** The error a promise rejects with (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`rejected with a non-Error: ${String(err)}`);
  }
  throw new Error('expected the promise to reject, but it resolved');
}
