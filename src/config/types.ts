/**
 * The validated, defaulted configuration. `loadConfig` (src/config/load.ts) builds it from the YAML
 * file and the environment; everything downstream reads only this shape. The settings are derived
 * from the tables of rules.ts: a key added there appears here.
 */
import type { GLOBALS, IDENTITY, LOG_FORMATS, LOG_LEVELS, Resolved, ResolvedSettings } from './rules.js';

export { DEFAULT_INTERVALS, DEFAULT_PORT } from './rules.js';

export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = (typeof LOG_FORMATS)[number];

export type StackAuth =
  | {
      readonly kind: 'client';
      readonly clientId: string;
      /** Loaded from `secret` or `secretFile`. Never logged. */
      readonly secret: string;
      /** SETTINGS.clientIdKey (rules.ts). */
      readonly clientIdKey: string;
    }
  | {
      readonly kind: 'token';
      /** A pre-issued bearer token, loaded from `token` or `tokenFile`. Never logged. */
      readonly token: string;
      /** Set when the token came from a file: re-read on a 401, so a rotated token is picked up. */
      readonly tokenFile?: string;
    };

export type Intervals = ResolvedSettings['intervals'];

export type RetryConfig = ResolvedSettings['retries'];

export interface TlsConfig {
  /** PEM contents, loaded from caFile / certFile / keyFile at config load. */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly insecureSkipVerify: boolean;
}

/** A stack's IDENTITY and settings (rules.ts), its TLS files read and `clientIdKey` moved into `auth`. */
export interface StackConfig extends Omit<ResolvedSettings, 'clientIdKey' | 'tls'>, Required<Resolved<typeof IDENTITY>> {
  readonly auth: StackAuth;
  readonly tls: TlsConfig;
}

export interface ExporterConfig extends Resolved<typeof GLOBALS> {
  readonly stacks: readonly StackConfig[];
  /** The file it was loaded from, if any (SIGHUP re-reads it). */
  readonly configFile?: string;
  /** The environment variables the file refers to as `${NAME}`: read, so never "unknown". */
  readonly fileVariables?: readonly string[];
}
