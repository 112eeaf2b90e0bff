import { DEFAULT_INTERVALS, type StackConfig } from '../../src/config/types.js';

/** A complete StackConfig with fast test settings; override what a test needs. */
export function testStack(overrides: Partial<StackConfig> = {}): StackConfig {
  return {
    name: 'test',
    baseUrl: 'http://127.0.0.1:1',
    auth: { kind: 'client', clientId: 'demo-client', secret: 'demo-secret', clientIdKey: 'clientID' },
    userAgent: 'cmdb-exporter/test',
    rateLimitPerMinute: 6000,
    maxConcurrency: 4,
    timeoutSeconds: 5,
    connectTimeoutSeconds: 2,
    retries: { max: 1, minDelaySeconds: 0.01, maxDelaySeconds: 0.05, maxRetryAfterSeconds: 2 },
    maxResponseBytes: 256 * 1024 * 1024,
    tls: { insecureSkipVerify: false },
    paging: { connectorPageSize: 2000, actionPageSize: 100, maxPages: 100 },
    track: { assets: [], users: [] },
    intervals: DEFAULT_INTERVALS,
    staleIntervals: 3,
    forbiddenBackoffSeconds: 900,
    forbiddenBackoffMaxSeconds: 14400,
    timezone: 'UTC',
    disabledEndpoints: [],
    maxSeries: 20000,
    ...overrides,
  };
}
