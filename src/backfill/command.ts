/**
 * `cmdb-exporter backfill`: the flags and the configuration, checked before anything is sent (exit
 * 2 naming the flag), the dry run's plan, then run.ts: read each stack's history within its budget,
 * replay the collectors over it, and write the series as TSDB blocks (promtool) or over remote
 * write, resumably (docs/backfill.md).
 */
import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { formatDuration } from '../config/durations.js';
import { envValue, KNOWN_VARS } from '../config/env.js';
import { checkFlags, FlagError, flagsHelp, parseFlags, type FlagValues } from '../config/flags.js';
import { loadConfig } from '../config/load.js';
import { secretsOf } from '../config/redact.js';
import type { ExporterConfig, StackConfig } from '../config/types.js';
import { ConfigError, FolderInUseError } from '../errors.js';
import { onPath } from '../executables.js';
import { createLogger } from '../logger.js';
import { serviceOf } from '../persist/document.js';
import { Folder, FolderError } from '../persist/folder.js';
import { SecretScrubber } from '../secrets.js';
import { invocationOf, programWords } from './again.js';
import { PROMTOOL_BLOCK_DURATION } from './blocks.js';
import { InstanceError, sdInstance } from './instance.js';
import { formatPlan, planStack } from './plan.js';
import { PrometheusApi, PrometheusApiError } from './prometheus-api.js';
import { BackfillRangeError, defaultTo, headBlockWarning, parseRange, rangeWords } from './range.js';
import { RemoteWriteFlagError, remoteWriteSecrets, remoteWriteSettings, shownUrl, type RemoteWriteSettings } from './remote-write-settings.js';
import { REPLAYED } from './replay.js';
import { loadCompression } from './write-request.js';
import { runSession } from './run.js';
import { StateMismatchError, type Fingerprint } from './state.js';
import { TargetRefusal } from './target-check.js';

export const BACKFILL_HELP = `Usage: cmdb-exporter backfill --config <file> --from <time> --out <dir> [options]

Reads the CMDB's own history (daily counts, connector runs, ingestion runs, Action jobs, change
history) and writes the series the exporter would have exported over that time: as Prometheus
TSDB blocks into --out, or over remote write into a running Prometheus, VictoriaMetrics, Mimir or
Thanos (see docs/backfill.md). What it has read and written is kept in --out: the same command
run again continues where it stopped.

Options:
${flagsHelp('backfill')}
Exit status: 0 complete; 1 something is missing (listed) or writing failed; 2 bad flags,
configuration or target; 130 stopped by a signal, Ctrl-C, SIGTERM or SIGHUP (run the same
command again to continue).
`;

type Flags = FlagValues<'backfill'>;

export interface BackfillIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  readonly now: () => number;
  /** The words that start the program, before `backfill`, for the command to continue (default: as this process was started). */
  readonly program?: readonly string[];
}

/** The environment variables the run read: the configuration's (CMDB_*, EXPORTER_*, LOG_*) and the file's ${VAR}s that were set. */
function environmentUsed(env: NodeJS.ProcessEnv, config: ExporterConfig): string[] {
  const set = (name: string) => envValue(env, name) !== undefined;
  return [...new Set([...KNOWN_VARS.filter(set), ...(config.fileVariables ?? []).filter(set)])].sort();
}

class UsageError extends Error {}

/** promtool from --promtool (must be executable) or PATH; undefined when there is none. */
export function findPromtool(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (flag !== undefined) {
    try {
      accessSync(flag, constants.X_OK);
      if (!statSync(flag).isFile()) throw new Error('not a file');
    } catch {
      throw new UsageError(`--promtool: ${flag} is not an executable file`);
    }
    return flag;
  }
  return onPath('promtool', env.PATH ?? '');
}

function selectStacks(stacks: readonly StackConfig[], name: string | undefined): StackConfig[] {
  if (name === undefined) return [...stacks];
  const found = stacks.filter((s) => s.name === name);
  if (found.length === 0) throw new UsageError(`--stack: no stack named ${JSON.stringify(name)} in the configuration (stacks: ${stacks.map((s) => s.name).join(', ')})`);
  return found;
}

/**
 * What must be the same for a run to continue the backfill in --out: the flags that decide what is
 * read and written (as typed: `--from 30d` continues with the range the first run resolved), and
 * per stack the configuration that does (its service, time zone, replayed intervals, names, endpoints).
 */
function fingerprintOf(flags: Flags, stacks: readonly StackConfig[], remote: RemoteWriteSettings | undefined): Fingerprint {
  const out: Record<string, string> = {
    '--from': flags.from ?? '',
    '--to': flags.to ?? defaultTo(flags['fill-gaps'] === true && remote !== undefined),
    '--step': flags.step ?? 'default',
    '--job': flags.job,
    '--instance': flags.instance ?? 'default',
    '--fill-gaps': String(flags['fill-gaps'] === true),
    // Never a secret in the state file: URLs without their credentials, the stacks' services as a hash.
    '--prometheus.url': flags['prometheus.url'] === undefined ? '' : shownUrl(flags['prometheus.url']),
    route: remote ? `remote write to ${shownUrl(remote.url)}, ${remote.maxSamplesPerSend} samples a request` : 'blocks',
  };
  for (const s of stacks) {
    const intervals = Object.fromEntries(REPLAYED.map((r) => [r.group, s.intervals[r.group]]));
    out[`stack ${s.name}`] = JSON.stringify({ service: serviceOf(s), timezone: s.timezone, intervals, track: s.track, disabledEndpoints: s.disabledEndpoints });
  }
  return out;
}

/** Everything that can be wrong before a request: throws UsageError and the like (exit 2). */
function check(flags: Flags, io: BackfillIo, scrubber: SecretScrubber) {
  const remote = remoteWriteSettings(flags);
  // A search for gaps written by remote write ends now: the outage the user just had is in it.
  const range = parseRange({ from: flags.from, to: flags.to, step: flags.step, upToNow: flags['fill-gaps'] === true && remote !== undefined }, Math.floor(io.now() / 1000));
  if (!flags['dry-run'] && flags.out === undefined) throw new UsageError('--out: is required: the directory of the backfill\'s state (and of the blocks, without --remote-write.url)');
  if (flags['fill-gaps'] && flags['prometheus.url'] === undefined) throw new UsageError('--fill-gaps: needs --prometheus.url, the Prometheus whose gaps to fill');
  const listen = flags['web.listen-address'];
  const config = loadConfig({ configFile: flags.config, env: io.env, overrides: { logLevel: flags['log.level'] ?? 'warn', logFormat: flags['log.format'], ...(listen ? { listenAddress: listen } : {}) } });
  for (const s of secretsOf(config)) scrubber.add(s);
  for (const s of remoteWriteSecrets(remote)) scrubber.add(s);
  // Only remote write needs the compression: said before anything is sent, and only then.
  if (remote && !flags['dry-run']) {
    try {
      loadCompression();
    } catch (e) {
      throw new UsageError(`--remote-write.url: ${(e as Error).message}`);
    }
  }
  const storagePath = daemonFolder(flags);
  const external = checkFlags('backfill', flags, io.env)['web.external-url'];
  const externalName = flags['web.external-url'] !== undefined ? '--web.external-url' : 'EXPORTER_WEB_EXTERNAL_URL';
  const address = external?.address ?? sdInstance(config.listenAddress);
  return {
    range,
    config,
    stacks: selectStacks(config.stacks, flags.stack),
    remote,
    promtool: flags['dry-run'] || remote ? undefined : findPromtool(flags.promtool, io.env),
    prometheus: flags['prometheus.url'] === undefined ? undefined : new PrometheusApi(flags['prometheus.url']),
    sdInstance: { address, from: external !== undefined ? `${externalName}'s host and port` : `the listen address ${config.listenAddress}` },
    storagePath,
  };
}

/** --storage.path: the daemon's folder, which must be there (it is read, never made or written). */
function daemonFolder(flags: Flags): string | undefined {
  const given = flags['storage.path'];
  if (given === undefined) return undefined;
  const dir = resolve(given);
  let folder = false;
  try {
    folder = statSync(dir).isDirectory();
  } catch {
    folder = false;
  }
  if (!folder) throw new UsageError(`--storage.path: ${dir} is not a folder: give the --storage.path of the daemon that polls with the same client id (it is read, never written)`);
  if (flags.out !== undefined && resolve(flags.out) === dir) throw new UsageError("--storage.path: is --out too: the daemon's folder is read only; give the backfill an --out of its own");
  return dir;
}

const EXIT_2 = [BackfillRangeError, UsageError, ConfigError, RemoteWriteFlagError, PrometheusApiError, StateMismatchError, InstanceError, TargetRefusal, FolderError, FolderInUseError];

/** Runs the command; returns the exit code (0 ok, 1 something missing or failed, 2 bad flags or configuration, 130 stopped). */
export async function runBackfill(argv: string[], io: BackfillIo): Promise<number> {
  const err = (text: string) => io.stderr.write(`cmdb-exporter backfill: ${text}\n`);
  let flags: Flags;
  try {
    flags = parseFlags('backfill', argv);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    err(`${e.message}\nRun cmdb-exporter backfill --help for the options.`);
    return 2;
  }
  if (flags.help) {
    io.stdout.write(BACKFILL_HELP);
    return 0;
  }
  const scrubber = new SecretScrubber();
  const exit2 = (e: unknown): number => {
    if (!EXIT_2.some((c) => e instanceof c)) throw e;
    err(scrubber.scrub((e as Error).message));
    return 2;
  };
  let checked: ReturnType<typeof check>;
  try {
    checked = check(flags, io, scrubber);
  } catch (e) {
    return exit2(e);
  }
  const { range, config, stacks, remote } = checked;

  if (flags['dry-run']) {
    // Blocks only: remote write has no head block to overlap (a blocks run asks --prometheus.url's version first, run.ts).
    const head = remote ? undefined : headBlockWarning(range, undefined);
    if (head) err(`warning: ${head}`);
    const plans = stacks.map((s) => planStack(s, range.from, range.to));
    io.stdout.write(`dry run: nothing is sent\n${plans.map((p) => formatPlan(p, range)).join('\n')}\n`);
    const route = remote ? `remote write to ${shownUrl(remote.url)}` : `blocks of ${PROMTOOL_BLOCK_DURATION} aligned to UTC days`;
    io.stdout.write(`steps: ${range.step === undefined ? "each group's poll interval, at most 5m" : formatDuration(range.step)}; ${route}${flags['fill-gaps'] ? `; --fill-gaps searches ${rangeWords(range.from, range.to, Math.floor(io.now() / 1000))}${remote ? '' : ' (blocks stay out of the last 3h, which Prometheus still holds in its head block)'} and reads only the days of the gaps` : ''}\n`);
    return 0;
  }

  const logger = createLogger({ level: config.logLevel, format: config.logFormat, scrubber, destination: io.stderr });
  const out = resolve(flags.out as string);
  let folder: Folder | undefined;
  try {
    // --out is this backfill's alone while it runs (0700 when made here, locked, naming this process).
    folder = await Folder.open({ dir: out, command: 'backfill', flag: '--out', logger, lost: () => logger.error({ out }, 'the lock of --out was removed or taken by another process: stop it, or this backfill, before they overwrite each other\'s state') });
    return await runSession({
      ...checked,
      argv,
      program: io.program ?? programWords(invocationOf(process, io.env)),
      environment: environmentUsed(io.env, config),
      stdout: io.stdout,
      stderr: io.stderr,
      now: Math.floor(io.now() / 1000),
      out,
      job: flags.job,
      instance: flags.instance,
      fillGaps: flags['fill-gaps'] === true,
      fingerprint: fingerprintOf(flags, stacks, remote),
      logger,
      scrubber,
    });
  } catch (e) {
    return exit2(e);
  } finally {
    folder?.close();
  }
}
