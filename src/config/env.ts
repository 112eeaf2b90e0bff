/**
 * Environment variables: the global settings, one stack configured without a file, and `${VAR}`
 * references in the YAML file. Each variable goes through the same rule as its YAML key (the tables
 * of rules.ts name the variables); problems are reported under the variable's name.
 */
import type { Check } from './checks.js';
import type { CredentialKey, CredentialNaming } from './credentials.js';
import { didYouMean, formatPath, type IssueList, type PathSegment } from './issues.js';
import { CREDENTIALS, GLOBALS, IDENTITY, keysOf, type Resolved, SETTINGS } from './rules.js';
import type { StackInput, StackParts } from './schema.js';
import type { StackSource } from './stack.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** A variable set to the empty string counts as unset (compose files often pass `VAR=`). */
export function envValue(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v;
}

/** `raw` checked by `check`, or undefined when unset or invalid (reported at `path`). */
export function checkedValue<T>(check: Check<T>, raw: string | undefined, path: string, issues: IssueList): T | undefined {
  if (raw === undefined) return undefined;
  const r = check(raw);
  if (r.ok) return r.value;
  issues.add(path, r.message);
  return undefined;
}

export const DEFAULT_STACK_NAME = 'default';

/** Variable → (dotted key of the stack, its rule), for every stack key that has a variable. */
export const STACK_VARS: ReadonlyArray<readonly [string, string, Check<unknown>]> = [IDENTITY, CREDENTIALS, SETTINGS]
  .flatMap((table) => keysOf(table))
  .flatMap(([dotted, { env, check }]) => (env === undefined ? [] : [[env, dotted, check] as const]));

const VAR_OF_KEY = new Map(STACK_VARS.map(([name, key]) => [key, name]));
const credentialVar = (key: CredentialKey): string => VAR_OF_KEY.get(key) ?? key;

export type GlobalKey = keyof typeof GLOBALS;
export type GlobalValue<K extends GlobalKey> = Resolved<typeof GLOBALS>[K];

/** Global key → its variable, for the keys that have one. */
export const GLOBAL_VARS: Readonly<Partial<Record<GlobalKey, string>>> = Object.fromEntries(
  keysOf(GLOBALS).flatMap(([key, { env }]) => (env === undefined ? [] : [[key, env]])),
);

function setAt(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  const last = keys.pop() ?? dotted;
  let node = target;
  for (const k of keys) node = (node[k] ??= {}) as Record<string, unknown>;
  node[last] = value;
}

const ENV_NAMING: CredentialNaming = {
  name: credentialVar,
  path: credentialVar,
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
    const value = checkedValue(check, raw, name, issues);
    if (value === undefined) valid = false;
    else setAt(input, key, value);
  }
  return {
    input: valid ? (input as StackInput) : undefined,
    // The variables that were valid: their checks across keys and files still run in this round.
    partial: valid ? undefined : (input as StackParts),
    has: (key) => envValue(env, credentialVar(key)) !== undefined,
    naming: ENV_NAMING,
    // Keys without a variable can only come from the file's `defaults`, which is where to change them.
    ownOrigin: (key) => VAR_OF_KEY.get(key) ?? `defaults.${key}`,
    builtinOrigin: (key) => `defaults.${key}`,
  };
}

/*
 * `${VAR}` expansion in string values of the parsed YAML. Expanding after parsing means a variable's
 * value is always one string value: it can never add keys or break the YAML syntax.
 *
 *   ${NAME}            the variable's value; unset is an error
 *   ${NAME:-default}   the default when the variable is unset or empty (as in the shell)
 *   $${                a literal "${"
 */
const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([^]*))?$/;

/** The expanded string, or a message saying why it cannot be expanded (the first problem met). */
function expandString(value: string, env: Env, referenced?: Set<string>): { value: string } | { problem: string } {
  let problem: string | undefined;
  const out = value.replace(/\$\$\{|\$\{([^}]*)(\})?/g, (match, inner: string | undefined, close: string | undefined) => {
    if (match === '$${' || problem !== undefined) return '${';
    const m = REFERENCE.exec(inner ?? '');
    if (close === undefined) problem = 'has an unterminated "${"; write "$${" for a literal "${"';
    else if (!m || (m[2] ?? '').includes('${')) problem = `has an invalid reference "\${${inner}}"; write \${NAME} or \${NAME:-default}`;
    else {
      const [, name = '', fallback] = m;
      referenced?.add(name);
      const set = env[name];
      if (fallback !== undefined) return set === undefined || set === '' ? fallback : set;
      if (set !== undefined) return set;
      problem = `environment variable ${name} is not set (write \${${name}:-default} to give a default)`;
    }
    return '';
  });
  return problem === undefined ? { value: out } : { problem };
}

/**
 * Expand every string value (not keys) of a parsed YAML tree. Keys whose value is null (`key:` with
 * nothing after it) are dropped, so they mean "not set".
 */
export function expandTree(node: unknown, env: Env, path: PathSegment[], issues: IssueList, referenced?: Set<string>): unknown {
  if (typeof node === 'string') {
    const r = expandString(node, env, referenced);
    if ('value' in r) return r.value;
    // Keep the text so the key still counts as set; the expansion problem is the one to report.
    issues.add(formatPath(path), r.problem);
    issues.block(formatPath(path));
    return node;
  }
  if (Array.isArray(node)) return node.map((item, i) => expandTree(item, env, [...path, i], issues, referenced));
  if (node !== null && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (value !== null) out[key] = expandTree(value, env, [...path, key], issues, referenced);
    }
    return out;
  }
  return node;
}

/** Variables read outside the configuration tables (the file name; sharding in src/shard.ts). */
const OTHER_VARS = ['EXPORTER_CONFIG', 'EXPORTER_SHARD', 'EXPORTER_TOTAL_SHARDS', 'EXPORTER_SHARD_FROM_POD_NAME', 'EXPORTER_WEB_CONFIG_FILE', 'EXPORTER_WEB_EXTERNAL_URL'];

/** Every CMDB_* and EXPORTER_* variable the exporter reads. */
export const KNOWN_VARS: readonly string[] = [...new Set([...STACK_VARS.map(([name]) => name), ...Object.values(GLOBAL_VARS), ...OTHER_VARS])];

/**
 * A `CMDB_*` or `EXPORTER_*` variable that the exporter does not read is most likely a typo
 * (`CMDB_TRACK_ASSET`): warned about with a did-you-mean, never an error (other tools may share the prefix).
 * `referenced`: the variables the configuration file refers to as `${NAME}`, which are read too.
 */
export function unknownVariables(env: Env, referenced: readonly string[] = []): Array<{ name: string; message: string }> {
  return Object.keys(env)
    .filter((name) => /^(CMDB|EXPORTER)_/.test(name) && !KNOWN_VARS.includes(name) && !referenced.includes(name))
    .sort()
    .map((name) => ({ name, message: `unknown environment variable, ignored${didYouMean(name, KNOWN_VARS)}` }));
}
