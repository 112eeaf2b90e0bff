/**
 * Environment variables: the global settings, and one stack configured without a file. Each value
 * goes through the same rule as its YAML key; problems are reported under the variable's name.
 */
import type { Check } from './checks.js';
import type { CredentialKey, CredentialNaming } from './credentials.js';
import type { IssueList } from './issues.js';
import { CREDENTIAL_RULES, GLOBAL_RULES, IDENTITY_RULES, SETTING_RULES, TLS_RULES, TRACK_RULES } from './rules.js';
import type { StackInput } from './schema.js';
import type { StackSource } from './stack.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** A variable set to the empty string counts as unset (compose files often pass `VAR=`). */
export function envValue(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

export const DEFAULT_STACK_NAME = 'default';

export const CREDENTIAL_VARS: Readonly<Record<CredentialKey, string>> = {
  clientId: 'CMDB_CLIENT_ID',
  secret: 'CMDB_SECRET',
  secretFile: 'CMDB_SECRET_FILE',
  token: 'CMDB_TOKEN',
  tokenFile: 'CMDB_TOKEN_FILE',
};

/** Variable → (dotted key of the stack, its rule). */
export const STACK_VARS: ReadonlyArray<readonly [string, string, Check<unknown>]> = [
  ['CMDB_STACK', 'name', IDENTITY_RULES.name],
  ['CMDB_BASE_URL', 'baseUrl', IDENTITY_RULES.baseUrl],
  ...Object.entries(CREDENTIAL_VARS).map(
    ([key, name]) => [name, key, CREDENTIAL_RULES[key as CredentialKey]] as const,
  ),
  ['CMDB_CLIENT_ID_KEY', 'clientIdKey', SETTING_RULES.clientIdKey],
  ['CMDB_CA_FILE', 'tls.caFile', TLS_RULES.caFile],
  ['CMDB_INSECURE_SKIP_VERIFY', 'tls.insecureSkipVerify', TLS_RULES.insecureSkipVerify],
  ['CMDB_RATE_LIMIT_PER_MINUTE', 'rateLimitPerMinute', SETTING_RULES.rateLimitPerMinute],
  ['CMDB_TIMEZONE', 'timezone', SETTING_RULES.timezone],
  ['CMDB_USER_AGENT', 'userAgent', SETTING_RULES.userAgent],
  ['CMDB_TRACK_ASSETS', 'track.assets', TRACK_RULES.assets],
  ['CMDB_TRACK_USERS', 'track.users', TRACK_RULES.users],
];

const VAR_OF_KEY = new Map(STACK_VARS.map(([name, key]) => [key, name]));

export const GLOBAL_VARS = {
  listenAddress: 'EXPORTER_LISTEN_ADDRESS',
  logLevel: 'LOG_LEVEL',
  logFormat: 'LOG_FORMAT',
} as const;

/** Paths for problems with command-line overrides: the flags of src/main.ts. */
export const GLOBAL_FLAGS = {
  listenAddress: '--web.listen-address',
  logLevel: '--log.level',
  logFormat: '--log.format',
} as const;

export type GlobalKey = keyof typeof GLOBAL_VARS;
export type GlobalValue<K extends GlobalKey> = (typeof GLOBAL_RULES)[K] extends Check<infer T> ? T : never;

/** The variable's value checked by the key's rule, or undefined when unset or invalid (reported). */
export function globalFromEnv<K extends GlobalKey>(key: K, env: Env, issues: IssueList): GlobalValue<K> | undefined {
  const raw = envValue(env, GLOBAL_VARS[key]);
  if (raw === undefined) return undefined;
  const r = (GLOBAL_RULES[key] as Check<GlobalValue<K>>)(raw);
  if (r.ok) return r.value;
  issues.add(GLOBAL_VARS[key], r.message);
  return undefined;
}

function setAt(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  const last = keys.pop() ?? dotted;
  let node = target;
  for (const k of keys) {
    const next = (node[k] ??= {}) as Record<string, unknown>;
    node = next;
  }
  node[last] = value;
}

const ENV_NAMING: CredentialNaming = {
  name: (key) => CREDENTIAL_VARS[key],
  path: (key) => CREDENTIAL_VARS[key],
  stack: 'CMDB_BASE_URL',
};

/** The stack configured by CMDB_* variables, or undefined when CMDB_BASE_URL is not set. */
export function readEnvStack(env: Env, issues: IssueList): StackSource | undefined {
  if (envValue(env, 'CMDB_BASE_URL') === undefined) return undefined;
  const input: Record<string, unknown> = { name: DEFAULT_STACK_NAME };
  let valid = true;
  for (const [name, key, check] of STACK_VARS) {
    const raw = envValue(env, name);
    if (raw === undefined) continue;
    if (key === 'secret' || key === 'token') issues.secret(raw);
    const r = check(raw);
    if (r.ok) setAt(input, key, r.value);
    else {
      issues.add(name, r.message);
      valid = false;
    }
  }
  return {
    input: valid ? (input as StackInput) : undefined,
    has: (key) => envValue(env, CREDENTIAL_VARS[key]) !== undefined,
    naming: ENV_NAMING,
    // Keys without a variable can only come from the file's `defaults`, which is where to change them.
    ownOrigin: (key) => VAR_OF_KEY.get(key) ?? `defaults.${key}`,
    builtinOrigin: (key) => `defaults.${key}`,
  };
}
