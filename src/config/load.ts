/**
 * loadConfig: the YAML file, the environment and the command line, validated into one
 * ExporterConfig with every default applied. Precedence: command line > environment > file >
 * defaults. Every problem is collected and thrown as one ConfigError.
 */
import type { ExporterConfig, StackConfig } from './types.js';
import type { Check } from './checks.js';
import { checkedValue, type Env, envValue, type GlobalKey, type GlobalValue, globalFromEnv, readEnvStack } from './env.js';
import { type FileConfig, parseFileConfig, readConfigFile } from './file.js';
import { IssueList } from './issues.js';
import { BUILTIN_GLOBALS, GLOBALS, type Resolved } from './rules.js';
import { buildStack, type StackSource } from './stack.js';

export { parseListenAddress } from './fields.js';
export { redactConfig, secretsOf } from './redact.js';
export { configWarnings, type ConfigWarning } from './rules.js';
export { unknownVariables } from './env.js';

export interface LoadConfigOptions {
  /** From --config, else env EXPORTER_CONFIG, else none. */
  configFile?: string;
  env: Env;
  /** Command-line overrides, highest precedence. */
  overrides?: { listenAddress?: string; logLevel?: string; logFormat?: string };
}

type Overrides = NonNullable<LoadConfigOptions['overrides']>;

/** One global setting: the first valid value of command line, environment, file, default. */
function resolveGlobal<K extends GlobalKey>(
  key: K,
  file: FileConfig | undefined,
  env: Env,
  overrides: Overrides | undefined,
  issues: IssueList,
): GlobalValue<K> {
  const { check, flag } = GLOBALS[key];
  const raw = flag === undefined ? undefined : (overrides as Record<string, string | undefined> | undefined)?.[key];
  const fromFlag = checkedValue(check as Check<GlobalValue<K>>, raw, flag ?? key, issues);
  const fromEnv = globalFromEnv(key, env, issues);
  const fromFile = file?.top?.[key] as GlobalValue<K> | undefined;
  return fromFlag ?? fromEnv ?? fromFile ?? (BUILTIN_GLOBALS[key] as GlobalValue<K>);
}

function stackSources(file: FileConfig | undefined, fileUsable: boolean, env: Env, issues: IssueList): readonly StackSource[] {
  const envStack = readEnvStack(env, issues);
  if (file?.stacks !== undefined && envStack !== undefined) {
    issues.add(
      'CMDB_BASE_URL',
      'is set, but the config file declares stacks; configure stacks either in the file or with CMDB_* variables, not both',
    );
    return [];
  }
  const sources = file?.stacks ?? (envStack === undefined ? [] : [envStack]);
  if (sources.length === 0 && fileUsable && file?.stacks === undefined) {
    issues.add('stacks', 'no CMDB configured; set CMDB_BASE_URL with credentials, or declare `stacks` in a config file');
  }
  // Without valid defaults, merged values would be guesses: report only each stack's own problems.
  return file !== undefined && file.defaults === undefined ? sources.map((s) => ({ ...s, input: undefined, partial: undefined })) : sources;
}

/** Synchronous (start-up and reload). Throws ConfigError (src/errors.ts) listing ALL problems. */
export function loadConfig(opts: LoadConfigOptions): ExporterConfig {
  const issues = new IssueList();
  issues.secret(opts.env.CMDB_SECRET);
  issues.secret(opts.env.CMDB_TOKEN);
  // An empty --config or EXPORTER_CONFIG= means "no file", as for every other variable.
  const configFile = opts.configFile?.trim() ? opts.configFile : envValue(opts.env, 'EXPORTER_CONFIG');
  const referenced = new Set<string>();
  const raw = configFile === undefined ? undefined : readConfigFile(configFile, opts.env, issues, referenced);
  const file = raw === undefined || configFile === undefined ? undefined : parseFileConfig(raw, configFile, issues);
  const fileUsable = configFile === undefined || raw !== undefined;

  const globals = Object.fromEntries(
    (Object.keys(GLOBALS) as GlobalKey[]).map((key) => [key, resolveGlobal(key, file, opts.env, opts.overrides, issues)]),
  ) as Resolved<typeof GLOBALS>;

  const stacks: StackConfig[] = [];
  for (const source of stackSources(file, fileUsable, opts.env, issues)) {
    const stack = buildStack(source, file?.defaults, issues);
    if (stack !== undefined) stacks.push(stack);
  }
  issues.throwIfAny();
  return {
    ...globals,
    stacks,
    ...(configFile === undefined ? {} : { configFile }),
    ...(referenced.size === 0 ? {} : { fileVariables: [...referenced].sort() }),
  };
}
