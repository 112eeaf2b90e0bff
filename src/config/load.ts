/**
 * loadConfig: the YAML file, the environment and the command line, validated into one
 * ExporterConfig with every default applied. Precedence: command line > environment > file >
 * defaults. Every problem is collected and thrown as one ConfigError.
 */
import { dirname, resolve } from 'node:path';
import type { ExporterConfig, StackConfig } from './types.js';
import { readStacksDir } from './stacks-dir.js';
import type { Check } from './checks.js';
import { checkedValue, type Env, envValue, expandTree, type GlobalKey, type GlobalValue, readEnvStack, unknownVariables } from './env.js';
import { type FileConfig, parseFileConfig, readYamlMapping } from './file.js';
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
  overrides?: { listenAddress?: string; logLevel?: string; logFormat?: string; storagePath?: string };
}

/** One global setting: the first valid value of command line, environment, file, default. */
function resolveGlobal<K extends GlobalKey>(
  key: K,
  file: FileConfig | undefined,
  env: Env,
  overrides: LoadConfigOptions['overrides'],
  issues: IssueList,
): GlobalValue<K> {
  const { flag, env: variable } = GLOBALS[key];
  const check = GLOBALS[key].check as Check<GlobalValue<K>>;
  const raw = flag === undefined ? undefined : (overrides as Record<string, string | undefined> | undefined)?.[key];
  const fromFlag = checkedValue(check, raw, flag ?? key, issues);
  const fromEnv = variable === undefined ? undefined : checkedValue(check, envValue(env, variable), variable, issues);
  const fromFile = file?.top?.[key] as GlobalValue<K> | undefined;
  return fromFlag ?? fromEnv ?? fromFile ?? (BUILTIN_GLOBALS[key] as GlobalValue<K>);
}

function stackSources(file: FileConfig | undefined, fileUsable: boolean, hasDir: boolean, env: Env, issues: IssueList): readonly StackSource[] {
  const envStack = readEnvStack(env, issues);
  if ((file?.stacks !== undefined || hasDir) && envStack !== undefined) {
    issues.add(
      'CMDB_BASE_URL',
      `is set, but ${file?.stacks !== undefined ? 'the config file declares stacks' : 'stacksDir is set'}; configure stacks either in the file or with CMDB_* variables, not both`,
    );
    return [];
  }
  const sources = file?.stacks ?? (envStack === undefined ? [] : [envStack]);
  // With stacksDir, no stack at all is valid: a fleet starts empty and its files come later.
  if (sources.length === 0 && fileUsable && file?.stacks === undefined && !hasDir) {
    issues.add('stacks', 'no CMDB configured; set CMDB_BASE_URL with credentials, or declare `stacks` in a config file');
  }
  // Without valid defaults, merged values would be guesses: report only each stack's own problems.
  return file !== undefined && file.defaults === undefined ? sources.map((s) => ({ ...s, input: undefined, partial: undefined })) : sources;
}

/**
 * The stacks of `stacksDir` (relative to the config file's directory when set there), merged with
 * the main file's `defaults`; a name used in two places is reported at the later one.
 */
function dirStacks(dir: string, configFile: string | undefined, file: FileConfig | undefined, env: Env, issues: IssueList): StackConfig[] {
  const fromEnv = envValue(env, 'EXPORTER_STACKS_DIR') !== undefined;
  const key = fromEnv ? 'EXPORTER_STACKS_DIR' : 'stacksDir';
  const path = !fromEnv && configFile !== undefined ? resolve(dirname(configFile), dir) : resolve(dir);
  const seen = new Map<string, { where: string; file?: string }>();
  (file?.stacks ?? []).forEach((s, i) => {
    if (s.input) seen.set(s.input.name, { where: `stacks[${i}] of the config file` });
  });
  const out: StackConfig[] = [];
  for (const placed of readStacksDir(path, key, env, issues)) {
    if (placed.name !== undefined) {
      const first = seen.get(placed.name);
      // Within one file the file's own check has said it already.
      if (first === undefined) seen.set(placed.name, { where: placed.where, file: placed.file });
      else if (first.file !== placed.file) placed.issues.add(placed.namePath, `duplicate stack name ${JSON.stringify(placed.name)}, also used by ${first.where}`);
    }
    // Without valid defaults, merged values would be guesses: report only the stack's own problems.
    const source = file !== undefined && file.defaults === undefined ? { ...placed.source, input: undefined } : placed.source;
    const stack = buildStack(source, file?.defaults, placed.issues);
    if (stack !== undefined) out.push(stack);
  }
  return out;
}

function storagePathOf(value: string | undefined, configFile: string | undefined, file: FileConfig | undefined, opts: LoadConfigOptions): string | undefined {
  if (value === undefined) return undefined;
  const fromFile = opts.overrides?.storagePath === undefined && envValue(opts.env, 'EXPORTER_STORAGE_PATH') === undefined && file?.top?.storagePath !== undefined;
  return fromFile && configFile !== undefined ? resolve(dirname(configFile), value) : resolve(value);
}

/** Synchronous (start-up and reload). Throws ConfigError (src/errors.ts) listing ALL problems. */
export function loadConfig(opts: LoadConfigOptions): ExporterConfig {
  const issues = new IssueList();
  issues.secret(opts.env.CMDB_SECRET);
  issues.secret(opts.env.CMDB_TOKEN);
  // An empty --config or EXPORTER_CONFIG= means "no file", as for every other variable.
  const configFile = opts.configFile?.trim() ? opts.configFile : envValue(opts.env, 'EXPORTER_CONFIG');
  const referenced = new Set<string>();
  const tree = configFile === undefined ? undefined : readYamlMapping(configFile, 'the config file', issues);
  const raw = tree === undefined ? undefined : (expandTree(tree, opts.env, [], issues, referenced) as Record<string, unknown>);
  const file = raw === undefined || configFile === undefined ? undefined : parseFileConfig(raw, configFile, issues);
  const fileUsable = configFile === undefined || raw !== undefined;

  const globals = Object.fromEntries(
    (Object.keys(GLOBALS) as GlobalKey[]).map((key) => [key, resolveGlobal(key, file, opts.env, opts.overrides, issues)]),
  ) as Resolved<typeof GLOBALS>;

  const fileStacks = stackSources(file, fileUsable, globals.stacksDir !== undefined, opts.env, issues);
  const stacks = fileStacks.flatMap((source) => buildStack(source, file?.defaults, issues) ?? []);
  if (globals.stacksDir !== undefined) {
    stacks.push(...dirStacks(globals.stacksDir, configFile, file, opts.env, issues));
  }
  // A misspelt variable (CMDB_SECERT) is most often why a setting is missing: said in the same report.
  issues.throwIfAny(unknownVariables(opts.env, [...referenced]).map((v) => ({ path: v.name, message: v.message })));
  // As stacksDir: set in the file, relative to the file's directory; from a flag or variable, to the working directory.
  const storagePath = storagePathOf(globals.storagePath, configFile, file, opts);
  return {
    ...globals,
    ...(storagePath === undefined ? {} : { storagePath }),
    stacks,
    ...(configFile === undefined ? {} : { configFile }),
    ...(referenced.size === 0 ? {} : { fileVariables: [...referenced].sort() }),
  };
}
