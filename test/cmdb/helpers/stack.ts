/** A complete StackConfig with test defaults: tiny delays and timeouts so failure paths run fast. */
import type { StackConfig } from '../../../src/config/types.js';
import { DEFAULT_INTERVALS } from '../../../src/config/types.js';

export type StackOverrides = Partial<Omit<StackConfig, 'retries' | 'paging' | 'tls'>> & {
  retries?: Partial<StackConfig['retries']>;
  paging?: Partial<StackConfig['paging']>;
  tls?: Partial<StackConfig['tls']>;
};

export function testStack(overrides: StackOverrides = {}): StackConfig {
  const { retries, paging, tls, ...rest } = overrides;
  return {
    name: 'test',
    baseUrl: 'http://127.0.0.1:1',
    auth: { kind: 'client', clientId: 'demo-client', secret: 'demo-secret', clientIdKey: 'clientID' },
    userAgent: 'cmdb-exporter-test/1.0',
    rateLimitPerMinute: 6000,
    maxConcurrency: 8,
    timeoutSeconds: 2,
    connectTimeoutSeconds: 1,
    maxResponseBytes: 8 * 1024 * 1024,
    proxyUrl: undefined,
    connectorSort: undefined,
    track: { assets: [], users: [] },
    intervals: DEFAULT_INTERVALS,
    staleIntervals: 3,
    forbiddenBackoffSeconds: 60,
    forbiddenBackoffMaxSeconds: 3600,
    timezone: 'UTC',
    disabledEndpoints: [],
    maxSeries: 100_000,
    ...rest,
    retries: { max: 2, minDelaySeconds: 0.001, maxDelaySeconds: 0.005, maxRetryAfterSeconds: 5, ...retries },
    paging: { connectorPageSize: 20, actionPageSize: 20, maxPages: 100, ...paging },
    tls: { insecureSkipVerify: false, ...tls },
  };
}
