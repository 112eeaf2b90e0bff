/** The shared test StackConfig with the client tests' settings: tiny delays and pages so paths run fast. */
import type { StackConfig } from '../../../src/config/types.js';
import { testStack as sharedStack, type StackOverrides } from '../../helpers/stack.js';

export type { StackOverrides };

export function testStack(overrides: StackOverrides = {}): StackConfig {
  return sharedStack({
    userAgent: 'cmdb-exporter-test/1.0',
    maxConcurrency: 8,
    timeoutSeconds: 2,
    connectTimeoutSeconds: 1,
    maxResponseBytes: 8 * 1024 * 1024,
    ...overrides,
    retries: { max: 2, minDelaySeconds: 0.001, maxDelaySeconds: 0.005, maxRetryAfterSeconds: 5, ...overrides.retries },
    paging: { connectorPageSize: 20, actionPageSize: 20, maxPages: 100, ...overrides.paging },
  });
}
