/**
 * Every command-line flag of every command, once (CONTRIBUTING.md, "Adding a command-line flag"):
 * each command's parser (node:util parseArgs), the checks of the values (checkFlags) and the
 * "Options:" of its --help derive from this table, so a flag both commands take behaves the same.
 *
 * An alias (`aliasOf`) is merged into the flag it stands for: given both, a value flag is refused
 * ("--config and --config.file are the same option"), a switch is on when either is.
 */
import { parseArgs } from 'node:util';
import { parseExternalUrl } from './scrape-base.js';

/** The daemon (`cmdb-exporter [options]`) and its subcommands. */
export type Command = 'daemon' | 'backfill';

export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  /** One-letter form, `-h`. */
  readonly short?: string;
  /** Placeholder of its value in --help, `<file>`; value flags only. */
  readonly value?: string;
  /** The value when the flag is not given (value flags; switches are off). */
  readonly default?: string;
  /** Given any number of times, its values in order (`--remote-write.header`); none: an empty list. */
  readonly multiple?: true;
  /** One line of help, wrapped when printed. An alias has none: its flag's help names it. */
  readonly help?: string;
  /** Per command, when the text differs (the backfill logs less by default). */
  readonly helpFor?: Partial<Record<Command, string>>;
  readonly commands: readonly Command[];
  /** Another spelling of this flag (Prometheus exporters say --config.file). */
  readonly aliasOf?: string;
  /** Read from this environment variable when the flag is not given (an empty value is not given). */
  readonly env?: string;
  /**
   * What the value must be (given, or from `env`), checked once --help and --version are answered:
   * the value parsed, or throws an error naming `name`, the flag or variable it came from (exit 2).
   */
  readonly parse?: (text: string, name: string) => unknown;
}

/** A flag's value that is not what the flag takes: exit 2 with the message (no pointer to --help: the flag is known). */
export class FlagValueError extends Error {}

/** --web.telemetry-path: a path, as the server routes it. */
function telemetryPath(text: string, name: string): string {
  if (!/^\/[\w\-./]*$/.test(text)) throw new FlagValueError(`${name} must be a path starting with /, got ${JSON.stringify(text)}`);
  return text;
}

/** --web.max-requests: digits only (Number() would read an empty value as 0, no limit, and 0x10 as 16). */
function maxRequests(text: string, name: string): number {
  if (!/^\d{1,6}$/.test(text) || Number(text) > 100_000) throw new FlagValueError(`${name} must be a whole number from 0 (no limit) to 100000, got ${JSON.stringify(text)}`);
  return Number(text);
}

const BOTH = ['daemon', 'backfill'] as const;
const DAEMON = ['daemon'] as const;
const BACKFILL = ['backfill'] as const;

/** In --help order: what a command's help lists first comes first. */
export const FLAGS = {
  config: { type: 'string', value: '<file>', help: 'YAML configuration file (env EXPORTER_CONFIG; alias --config.file)', commands: BOTH },
  'config.file': { type: 'string', commands: BOTH, aliasOf: 'config' },
  from: {
    type: 'string',
    value: '<time>',
    help: 'start: a duration back from now (30d), now-<duration>, an ISO 8601 time or day, or unix seconds (required)',
    commands: BACKFILL,
  },
  to: {
    type: 'string',
    value: '<time>',
    help: 'end (default now-3h: blocks stay out of the hours Prometheus is still writing itself; --fill-gaps by remote write: now)',
    commands: BACKFILL,
  },
  out: {
    type: 'string',
    value: '<dir>',
    help: "the backfill's state (answers read, windows written) and, without --remote-write.url, the blocks (created if missing); without promtool, the OpenMetrics files go here",
    commands: BACKFILL,
  },
  stack: { type: 'string', value: '<name>', help: 'only this stack (default: every configured stack)', commands: BACKFILL },
  job: {
    type: 'string',
    value: '<name>',
    default: 'cmdb-exporter',
    help: 'the job label Prometheus gives the scraped series (default cmdb-exporter, the job the shipped rules and dashboards select)',
    commands: BACKFILL,
  },
  instance: {
    type: 'string',
    value: '<addr>',
    help: "the instance label of the scraped series (default: with --prometheus.url the live target's; else the address /sd hands out: --web.external-url's host and port, else the listen address)",
    commands: BACKFILL,
  },
  step: { type: 'string', value: '<duration>', help: "one sample per series every <duration>, at least 1s (default: each poll group's interval, at most 5m)", commands: BACKFILL },
  'fill-gaps': {
    type: 'boolean',
    help: "backfill only where this exporter's series are missing in --prometheus.url (from up of --job and its own cmdb_endpoint_up) within --from/--to",
    commands: BACKFILL,
  },
  'prometheus.url': {
    type: 'string',
    value: '<url>',
    help: 'the Prometheus that scrapes the exporter: for --fill-gaps, the default --instance, and the check of a remote-write target',
    commands: BACKFILL,
  },
  'remote-write.url': {
    type: 'string',
    value: '<url>',
    help: 'send over Prometheus remote write 1.0 (protobuf, snappy) instead of writing blocks, e.g. http://prometheus:9090/api/v1/write',
    commands: BACKFILL,
  },
  'remote-write.basic-auth.username': { type: 'string', value: '<name>', help: 'basic auth user of the remote-write target (with the password file)', commands: BACKFILL },
  'remote-write.basic-auth.password-file': { type: 'string', value: '<file>', help: 'file holding the basic auth password of the remote-write target', commands: BACKFILL },
  'remote-write.bearer-token-file': { type: 'string', value: '<file>', help: 'file holding a bearer token for the remote-write target', commands: BACKFILL },
  'remote-write.tls.ca-file': { type: 'string', value: '<file>', help: "CA certificate(s) that sign the remote-write target's certificate", commands: BACKFILL },
  'remote-write.tls.cert-file': { type: 'string', value: '<file>', help: 'client certificate for the remote-write target (with the key file)', commands: BACKFILL },
  'remote-write.tls.key-file': { type: 'string', value: '<file>', help: 'key of the client certificate', commands: BACKFILL },
  'remote-write.tls.insecure-skip-verify': { type: 'boolean', help: "do not verify the remote-write target's certificate", commands: BACKFILL },
  'remote-write.header': {
    type: 'string',
    value: '<header>',
    multiple: true,
    help: "an extra header on every remote-write request, 'Name: value', e.g. 'X-Scope-OrgID: tenant-1' (repeatable)",
    commands: BACKFILL,
  },
  'remote-write.max-samples-per-send': { type: 'string', value: '<n>', help: 'samples in one remote-write request at most (default 10000)', commands: BACKFILL },
  'remote-write.retry-for': {
    type: 'string',
    value: '<duration>',
    help: 'how long a remote-write request that may pass (5xx, 429, a network error, a timeout) is retried with back-off, the pre-flight check included, before the backfill gives up (default 15m)',
    commands: BACKFILL,
  },
  'dry-run': {
    type: 'boolean',
    help: "print the plan (requests per endpoint, time at the pace and the service's speed) and send nothing",
    commands: BACKFILL,
  },
  promtool: {
    type: 'string',
    value: '<path>',
    help: 'promtool to run (default: promtool on PATH; without one, the OpenMetrics files are written and the command to run is printed)',
    commands: BACKFILL,
  },
  'web.listen-address': {
    type: 'string',
    value: '<addr>',
    help: 'host:port to serve on (env EXPORTER_LISTEN_ADDRESS, default :9873)',
    helpFor: { backfill: "the daemon's listen address, for the default --instance (env EXPORTER_LISTEN_ADDRESS, default :9873)" },
    commands: BOTH,
  },
  'web.telemetry-path': { type: 'string', value: '<path>', help: 'path of the metrics (default /metrics)', commands: DAEMON, parse: telemetryPath },
  'web.config.file': {
    type: 'string',
    value: '<file>',
    help: "TLS, basic auth and headers of the exporter's own server, in the exporter-toolkit web-config.yml format (env EXPORTER_WEB_CONFIG_FILE; see docs/security.md)",
    commands: DAEMON,
    env: 'EXPORTER_WEB_CONFIG_FILE',
  },
  'web.external-url': {
    type: 'string',
    value: '<url>',
    help: 'the URL Prometheus reaches this exporter at (a Service name, an ingress), for the targets /sd lists (env EXPORTER_WEB_EXTERNAL_URL; default: the listen address)',
    helpFor: { backfill: "the daemon's external URL, for the default --instance (env EXPORTER_WEB_EXTERNAL_URL)" },
    commands: BOTH,
    env: 'EXPORTER_WEB_EXTERNAL_URL',
    parse: parseExternalUrl,
  },
  'web.max-requests': { type: 'string', value: '<n>', help: 'concurrent scrapes served at once; more get 503 (default 40, 0: no limit)', commands: DAEMON, parse: maxRequests },
  'web.disable-exporter-metrics': { type: 'boolean', help: 'leave out the process_* and nodejs_* metrics of the exporter itself', commands: DAEMON },
  'web.openmetrics-created': {
    type: 'boolean',
    help: "write each counter's and histogram's start as a _created line in the OpenMetrics format (off: a Prometheus without created-timestamp ingestion stores them as series of their own; see docs/formats.md)",
    commands: DAEMON,
  },
  'storage.path': {
    type: 'string',
    value: '<dir>',
    help: 'keep what the exporter knew (series, connector history cursor, request budget, back-offs) in this directory, so that a restart serves every series at once and reads on where it stopped (env EXPORTER_STORAGE_PATH; default: none, every start is a cold start; see docs/restarts.md)',
    helpFor: {
      backfill: "the --storage.path of the daemon that polls with the same client id, read only: the backfill uses the daemon's token instead of asking for its own, which would end the daemon's where the CMDB keeps one token per client",
    },
    commands: BOTH,
  },
  'log.level': {
    type: 'string',
    value: '<level>',
    help: 'fatal|error|warn|info|debug|trace|silent (env LOG_LEVEL, default info)',
    helpFor: { backfill: 'fatal|error|warn|info|debug|trace|silent, on stderr (default warn)' },
    commands: BOTH,
  },
  'log.format': { type: 'string', value: '<format>', help: 'json|pretty (env LOG_FORMAT, default json)', commands: BOTH },
  'check-config': { type: 'boolean', help: 'validate the configuration and exit: 0 valid, 2 invalid (alias --config.check)', commands: DAEMON },
  'config.check': { type: 'boolean', commands: DAEMON, aliasOf: 'check-config' },
  shard: { type: 'string', value: '<i>', help: 'poll only shard i (0 ≤ i < n, n from --total-shards) of the configured stacks (env EXPORTER_SHARD)', commands: DAEMON },
  'total-shards': { type: 'string', value: '<n>', help: 'how many shards the stacks are split into (env EXPORTER_TOTAL_SHARDS)', commands: DAEMON },
  'shard-from-pod-name': {
    type: 'boolean',
    help: "take i from the pod name's ordinal (POD_NAME or HOSTNAME, e.g. cmdb-exporter-2 → 2; env EXPORTER_SHARD_FROM_POD_NAME=true)",
    commands: DAEMON,
  },
  once: { type: 'boolean', help: 'poll every endpoint once, print the exposition to stdout, exit 1 if any endpoint failed (logs go to stderr)', commands: DAEMON },
  version: { type: 'boolean', short: 'v', help: 'print the version and exit', commands: DAEMON },
  help: { type: 'boolean', short: 'h', help: 'print this help and exit', commands: BOTH },
} as const satisfies Readonly<Record<string, FlagSpec>>;

type Table = typeof FLAGS;
export type FlagName = keyof Table;
type Alias = { [K in FlagName]: Table[K] extends { aliasOf: string } ? K : never }[FlagName];
type TakenBy<C extends Command> = { [K in FlagName]: C extends Table[K]['commands'][number] ? K : never }[FlagName];
type ValueOf<S> = S extends { type: 'boolean' } ? boolean : S extends { multiple: true } ? readonly string[] : S extends { default: string } ? string : string | undefined;

/** What a command's parser returns: every flag it takes, aliases merged into their flag. */
export type FlagValues<C extends Command> = { readonly [K in Exclude<TakenBy<C>, Alias>]: ValueOf<Table[K]> };

/** A flag the command line got wrong: exit 2 with the message. */
export class FlagError extends Error {}

type Checked<S> = S extends { parse: (text: string, name: string) => infer T } ? T | undefined : S extends { env: string } ? string | undefined : never;

/** What checkFlags returns: each flag the command takes with a check or a variable, its value (undefined: neither given). */
export type CheckedFlags<C extends Command> = { readonly [K in TakenBy<C> as [Checked<Table[K]>] extends [never] ? never : K]: Checked<Table[K]> };

const entries = Object.entries(FLAGS) as Array<[FlagName, FlagSpec]>;

function takenBy(command: Command): Array<[FlagName, FlagSpec]> {
  return entries.filter(([, spec]) => spec.commands.includes(command));
}

/** The flags `command` takes, parsed from `argv` (no positionals). Throws FlagError. */
export function parseFlags<C extends Command>(command: C, argv: readonly string[]): FlagValues<C> {
  const options = Object.fromEntries(
    takenBy(command).map(([name, spec]) => [
      name,
      { type: spec.type, ...(spec.short ? { short: spec.short } : {}), ...(spec.multiple ? { multiple: true } : {}), ...(spec.default === undefined ? {} : { default: spec.default }) },
    ]),
  );
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values as Record<string, string | boolean | string[] | undefined>;
  } catch (err) {
    throw new FlagError((err as Error).message);
  }
  const out: Record<string, string | boolean | readonly string[] | undefined> = {};
  for (const [name, spec] of takenBy(command)) {
    if (spec.aliasOf !== undefined) continue;
    out[name] = spec.type === 'boolean' ? values[name] === true : spec.multiple ? (values[name] ?? []) : values[name];
  }
  for (const [name, spec] of takenBy(command)) {
    const target = spec.aliasOf;
    if (target === undefined || values[name] === undefined) continue;
    if (spec.type === 'boolean') out[target] = out[target] === true || values[name] === true;
    else if (out[target] !== undefined) throw new FlagError(`--${target} and --${name} are the same option; give one of them`);
    else out[target] = values[name];
  }
  return out as FlagValues<C>;
}

/**
 * The values of `flags` that the table checks or reads from a variable: each given flag's value,
 * else its variable's, parsed. Throws what the flag's `parse` throws (FlagValueError, ConfigError).
 */
export function checkFlags<C extends Command>(command: C, flags: FlagValues<C>, env: Readonly<Record<string, string | undefined>>): CheckedFlags<C> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of takenBy(command)) {
    if (spec.parse === undefined && spec.env === undefined) continue;
    const given = (flags as Record<string, unknown>)[name] as string | undefined;
    const fromEnv = spec.env === undefined ? undefined : env[spec.env] || undefined;
    const text = given ?? fromEnv;
    const source = given !== undefined ? `--${name}` : (spec.env as string);
    out[name] = text === undefined || spec.parse === undefined ? text : spec.parse(text, source);
  }
  return out as CheckedFlags<C>;
}

const HELP_COLUMN = 32;
const HELP_WIDTH = 100;

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

/** `  -h, --help          print this help`, one entry per flag `command` takes, in table order. */
export function flagsHelp(command: Command): string {
  const indent = ' '.repeat(HELP_COLUMN);
  const out: string[] = [];
  for (const [name, spec] of takenBy(command)) {
    const help = spec.helpFor?.[command] ?? spec.help;
    if (help === undefined) continue;
    const label = `  ${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.value ? ` ${spec.value}` : ''}`;
    const text = wrap(help, HELP_WIDTH - HELP_COLUMN);
    if (label.length + 2 > HELP_COLUMN) out.push(label, ...text.map((t) => indent + t));
    else out.push(label.padEnd(HELP_COLUMN) + text[0], ...text.slice(1).map((t) => indent + t));
  }
  return `${out.join('\n')}\n`;
}
