/** Builds a CmdbClient with a fresh registry, a captured logger and (optionally) a fake clock. */
import { afterEach } from 'vitest';
import { CmdbClient, type CmdbClientOptions } from '../../../src/cmdb/client.js';
import { secretsOfStack } from '../../../src/config/redact.js';
import type { StackConfig } from '../../../src/config/types.js';
import { captureLog, type CapturedLog } from './log.js';
import { testMetrics, type TestMetrics } from './metrics.js';

export interface TestClient {
  client: CmdbClient;
  metrics: TestMetrics;
  log: CapturedLog;
}

const open: CmdbClient[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

export function makeClient(
  stack: StackConfig,
  extra: Partial<Pick<CmdbClientOptions, 'clock' | 'random' | 'dispatcher' | 'enabled' | 'seen' | 'carried' | 'budget' | 'onReserve'>> = {},
): TestClient {
  const metrics = testMetrics();
  const log = captureLog(stack.name);
  // As src/stacks.ts does before a client is made: the stack's secrets are known to the scrubber.
  for (const secret of secretsOfStack(stack)) log.scrubber.add(secret);
  const client = new CmdbClient({
    stack,
    instruments: metrics.instruments,
    logger: log.logger,
    scrubber: log.scrubber,
    ...extra,
  });
  open.push(client);
  return { client, metrics, log };
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
