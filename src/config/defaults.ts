/** Built-in defaults: the bottom layer under `defaults` and each stack's own values. */
import type { DataEndpoint } from '../api/endpoints.js';
import { DEFAULT_USER_AGENT } from '../version.js';
import { DEFAULT_INTERVALS, DEFAULT_PORT, type Intervals, type LogFormat, type LogLevel, type RetryConfig } from './types.js';

/** Per-stack settings after merging: every key has a value except the optional ones. */
export interface ResolvedSettings {
  clientIdKey: string;
  userAgent: string;
  rateLimitPerMinute: number;
  maxConcurrency: number;
  timeoutSeconds: number;
  connectTimeoutSeconds: number;
  retries: RetryConfig;
  maxResponseBytes: number;
  tls: { caFile?: string; certFile?: string; keyFile?: string; insecureSkipVerify: boolean };
  proxyUrl?: string;
  paging: { connectorPageSize: number; actionPageSize: number; maxPages: number };
  connectorSort?: string;
  track: { assets: readonly string[]; users: readonly string[] };
  intervals: Intervals;
  staleIntervals: number;
  forbiddenBackoffSeconds: number;
  forbiddenBackoffMaxSeconds: number;
  timezone: string;
  disabledEndpoints: readonly DataEndpoint[];
  maxSeries: number;
}

export const BUILTIN_SETTINGS: ResolvedSettings = {
  clientIdKey: 'clientID',
  userAgent: DEFAULT_USER_AGENT,
  rateLimitPerMinute: 50,
  maxConcurrency: 4,
  timeoutSeconds: 30,
  connectTimeoutSeconds: 10,
  retries: { max: 3, minDelaySeconds: 0.5, maxDelaySeconds: 30, maxRetryAfterSeconds: 120 },
  maxResponseBytes: 256 * 1024 * 1024,
  tls: { insecureSkipVerify: false },
  paging: { connectorPageSize: 2000, actionPageSize: 100, maxPages: 100 },
  track: { assets: [], users: [] },
  intervals: DEFAULT_INTERVALS,
  staleIntervals: 3,
  forbiddenBackoffSeconds: 900,
  forbiddenBackoffMaxSeconds: 14_400,
  timezone: 'UTC',
  disabledEndpoints: [],
  maxSeries: 20_000,
};

export const BUILTIN_GLOBALS: { listenAddress: string; logLevel: LogLevel; logFormat: LogFormat; enableReload: boolean } = {
  listenAddress: `:${DEFAULT_PORT}`,
  logLevel: 'info',
  logFormat: 'json',
  enableReload: false,
};
