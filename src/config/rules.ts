/**
 * The rule for every configuration key, in one table shared by the YAML schema and the environment
 * variables. Ranges are generous but finite: they catch typos (a timeout of 30000 meant as ms, a
 * page size of 0) without forbidding unusual but working set-ups.
 */
import type { LogFormat, LogLevel } from './types.js';
import { bool, bytesIn, numberIn, oneOf, secondsIn, text } from './checks.js';
import {
  baseUrl,
  clientIdKey,
  connectorSort,
  endpointList,
  filePath,
  headerText,
  interval,
  listenAddress,
  nameList,
  proxyUrl,
  secretText,
  stackName,
  timezone,
  tokenText,
} from './fields.js';

const whole = { integer: true };

export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

export const GLOBAL_RULES = {
  listenAddress,
  logLevel: oneOf(LOG_LEVELS),
  logFormat: oneOf(LOG_FORMATS),
  enableReload: bool,
};

export const CREDENTIAL_RULES = {
  clientId: text(),
  secret: secretText,
  secretFile: filePath,
  token: tokenText,
  tokenFile: filePath,
};

export const IDENTITY_RULES = { name: stackName, baseUrl };

export const RETRY_RULES = {
  max: numberIn(0, 10, whole),
  minDelaySeconds: secondsIn(0, 60),
  maxDelaySeconds: secondsIn(0, 3600),
  maxRetryAfterSeconds: secondsIn(0, 3600),
};

export const TLS_RULES = { caFile: filePath, certFile: filePath, keyFile: filePath, insecureSkipVerify: bool };

export const PAGING_RULES = {
  connectorPageSize: numberIn(1, 10_000, whole),
  actionPageSize: numberIn(1, 2_000, whole),
  maxPages: numberIn(1, 10_000, whole),
};

export const TRACK_RULES = { assets: nameList(), users: nameList() };

export const INTERVAL_RULES = {
  inventory: interval,
  license: interval,
  connectors: interval,
  ingestion: interval,
  actions: interval,
  actionJobs: interval,
  actionJobsRefresh: interval,
  changes: interval,
};

/** Per-stack keys that may also be set under `defaults` (all but name, baseUrl and credentials). */
export const SETTING_RULES = {
  clientIdKey,
  userAgent: headerText,
  // The real service allows 60 requests a minute; more is allowed for other deployments.
  rateLimitPerMinute: numberIn(1, 6000, whole),
  maxConcurrency: numberIn(1, 64, whole),
  timeoutSeconds: secondsIn(0.1, 3600),
  connectTimeoutSeconds: secondsIn(0.1, 600),
  maxResponseBytes: bytesIn(1024, 2 * 1024 ** 3),
  proxyUrl,
  connectorSort,
  staleIntervals: numberIn(1, 100, whole),
  forbiddenBackoffSeconds: secondsIn(1, 86_400),
  forbiddenBackoffMaxSeconds: secondsIn(1, 7 * 86_400),
  timezone,
  disabledEndpoints: endpointList,
  maxSeries: numberIn(1, 10_000_000, whole),
};
