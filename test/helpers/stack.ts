import { BUILTIN_SETTINGS } from '../../src/config/rules.js';
import type { StackConfig } from '../../src/config/types.js';

export type StackOverrides = Partial<Omit<StackConfig, 'retries' | 'paging' | 'tls'>> & {
  retries?: Partial<StackConfig['retries']>;
  paging?: Partial<StackConfig['paging']>;
  tls?: Partial<StackConfig['tls']>;
};

/**
 * A complete StackConfig: the built-in defaults, with a budget and delays that keep tests fast
 * (a test must not wait on the production rate budget or back-off). Override what a test needs.
 */
export function testStack(overrides: StackOverrides = {}): StackConfig {
  const { retries, paging, tls, ...rest } = overrides;
  return {
    ...BUILTIN_SETTINGS,
    name: 'test',
    baseUrl: 'http://127.0.0.1:1',
    auth: { kind: 'client', clientId: 'demo-client', secret: 'demo-secret', clientIdKey: 'clientID' },
    rateLimitPerMinute: 6000,
    actionJobsPerMinute: 6000,
    queriesPerMinute: 6000,
    timeoutSeconds: 5,
    connectTimeoutSeconds: 2,
    ...rest,
    retries: { max: 1, minDelaySeconds: 0.01, maxDelaySeconds: 0.05, maxRetryAfterSeconds: 2, ...retries },
    paging: { ...BUILTIN_SETTINGS.paging, ...paging },
    tls: { insecureSkipVerify: false, ...tls },
  };
}
