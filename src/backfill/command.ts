/**
 * `cmdb-exporter backfill`: reads each stack's history within its budget, replays the collectors
 * over it, writes OpenMetrics text and turns it into TSDB blocks with promtool (docs/backfill.md).
 *
 * The output is cut into windows of BLOCK_SECONDS aligned as promtool aligns its blocks, one
 * OpenMetrics file each: promtool reads its whole input once per block it writes, so one block per
 * file keeps that to one pass, and only one window's text is on disk at a time.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Registry } from 'prom-client';
import { openRoad } from '../cmdb/road.js';
import { formatDuration } from '../config/durations.js';
import { FlagError, flagsHelp, parseFlags, type FlagValues } from '../config/flags.js';
import { loadConfig } from '../config/load.js';
import { secretsOf } from '../config/redact.js';
import type { ExporterConfig, StackConfig } from '../config/types.js';
import { ConfigError } from '../errors.js';
import { onPath } from '../executables.js';
import { createLogger, type Logger } from '../logger.js';
import { createInstruments } from '../metrics/instruments.js';
import { SecretScrubber } from '../secrets.js';
import { readHistory, type StackHistory } from './history.js';
import { OpenMetricsWriter } from './openmetrics.js';
import { formatPlan, planStack } from './plan.js';
import { Progress } from './progress.js';
import { BackfillRangeError, parseRange, type BackfillRange } from './range.js';
import { BACKFILLED_FAMILIES, replayStack, type GroupReplay } from './replay.js';

/** promtool's block length for --max-block-duration=18h (its block ranges are 2h × 3^n). */
export const BLOCK_SECONDS = 18 * 3600;

export const BACKFILL_HELP = `Usage: cmdb-exporter backfill --config <file> --from <time> --out <dir> [options]

Reads the CMDB's own history (daily counts, connector runs, ingestion runs, Action jobs, change
history) and writes the series the exporter would have exported over that time as Prometheus TSDB
blocks into --out (see docs/backfill.md).

Options:
${flagsHelp('backfill')}`;

export interface BackfillIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  readonly now: () => number;
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

const iso = (s: number) => new Date(s * 1000).toISOString();

/** Runs the command; returns the exit code (0 ok, 1 failure, 2 bad flags or configuration). */
export async function runBackfill(argv: string[], io: BackfillIo): Promise<number> {
  const err = (text: string) => io.stderr.write(`cmdb-exporter backfill: ${text}\n`);
  let flags: FlagValues<'backfill'>;
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
  let range: BackfillRange;
  let stacks: StackConfig[];
  let promtool: string | undefined;
  let config: ExporterConfig;
  const scrubber = new SecretScrubber();
  try {
    range = parseRange({ from: flags.from, to: flags.to, step: flags.step }, Math.floor(io.now() / 1000));
    if (!flags['dry-run'] && flags.out === undefined) throw new UsageError('--out: is required: the directory the blocks go to');
    config = loadConfig({ configFile: flags.config, env: io.env, overrides: { logLevel: flags['log.level'] ?? 'warn', logFormat: flags['log.format'] } });
    for (const s of secretsOf(config)) scrubber.add(s);
    stacks = selectStacks(config.stacks, flags.stack);
    promtool = flags['dry-run'] ? undefined : findPromtool(flags.promtool, io.env);
  } catch (e) {
    if (e instanceof BackfillRangeError || e instanceof UsageError || e instanceof ConfigError) {
      err(e.message);
      return 2;
    }
    throw e;
  }
  for (const w of range.warnings) err(`warning: ${w}`);

  const plans = stacks.map((s) => planStack(s, range.from, range.to));
  if (flags['dry-run']) {
    io.stdout.write(`dry run: nothing is sent\n${plans.map((p) => formatPlan(p, range)).join('\n')}\n`);
    io.stdout.write(`steps: ${range.step === undefined ? "each group's poll interval, at most 5m" : formatDuration(range.step)}; blocks of ${formatDuration(BLOCK_SECONDS)}\n`);
    return 0;
  }

  const logger = createLogger({ level: config.logLevel, format: config.logFormat, scrubber, destination: io.stderr });
  const out = resolve(flags.out as string);
  mkdirSync(out, { recursive: true });
  for (const p of plans) io.stdout.write(`${formatPlan(p, range)}\n`);

  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const readStarted = Date.now();
  const reading = new Progress('reading history', plans.reduce((n, p) => n + p.knownRequests, 0), 'requests', io.stderr);
  // The backfill's own figure: requests that left, as the road reports them (not read back from a registry).
  let requests = 0;
  const histories: StackHistory[] = await Promise.all(
    stacks.map(async (stack) => {
      // The daemon's client and readers, the budget set to the backfill's share.
      const paced: StackConfig = { ...stack, rateLimitPerMinute: stack.backfillRequestsPerMinute };
      const stackLogger = logger.child({ stack: stack.name });
      const road = openRoad({ stack: paced, instruments, logger: stackLogger, scrubber });
      road.client.events.requests.on(() => requests++);
      try {
        return await readHistory({ stack, readers: road.readers, logger: stackLogger, from: range.from, to: range.to, progress: { step: () => reading.advance(), grow: (n) => reading.grow(n) } });
      } finally {
        await road.close();
      }
    }),
  );
  reading.finish(`(${requests} sent)`);
  const readSeconds = (Date.now() - readStarted) / 1000;
  const failed = histories.flatMap((h, i) => h.failures.map((f) => `${stacks[i]?.name}/${f.endpoint} (${f.count} failed)`));

  const targetLabels: Record<string, string> = { job: flags.job, ...(flags.instance ? { instance: flags.instance } : {}) };
  // Ctrl-C or SIGTERM: stop after the window being written, remove the unfinished files, exit 130.
  let interrupted = false;
  const interrupt = () => {
    interrupted = true;
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  let result: Awaited<ReturnType<typeof writeBlocks>>;
  try {
    result = await writeBlocks({ stacks, histories, range, out, promtool, io, logger, targetLabels }, () => interrupted);
  } catch (e) {
    if (interrupted) {
      err('interrupted: the blocks written so far are in --out; the unfinished files were removed');
      return 130;
    }
    err((e as Error).message);
    return 1;
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
  io.stdout.write(
    [
      `requests: ${requests} in ${formatDuration(Math.round(readSeconds))}`,
      `openmetrics: ${result.samples} samples, ${result.bytes} bytes in ${result.files} file(s), ${result.generateSeconds.toFixed(1)}s, peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`,
      promtool
        ? `promtool: ${result.files} run(s) in ${result.promtoolSeconds.toFixed(1)}s; blocks in ${out}`
        : `promtool not found: the OpenMetrics files are in ${out}; turn them into blocks with\n  for f in ${join(out, '*.om')}; do promtool tsdb create-blocks-from openmetrics --max-block-duration=${formatDuration(BLOCK_SECONDS)} "$f" ${out} && rm "$f"; done`,
      `next: copy the blocks into Prometheus's data directory (docs/backfill.md)`,
      ...(failed.length > 0 ? [`left out, since their history could not be read: ${failed.join(', ')}`] : []),
    ].join('\n') + '\n',
  );
  return failed.length > 0 ? 1 : 0;
}

interface WriteOptions {
  readonly stacks: readonly StackConfig[];
  readonly histories: readonly StackHistory[];
  readonly range: BackfillRange;
  readonly out: string;
  readonly promtool: string | undefined;
  readonly io: BackfillIo;
  readonly logger: Logger;
  readonly targetLabels: Readonly<Record<string, string>>;
}

interface WriteResult {
  samples: number;
  bytes: number;
  files: number;
  generateSeconds: number;
  promtoolSeconds: number;
}

/** One promtool run over one window's file: resolves with its time, rejects naming the file. */
function promtoolRun(promtool: string, path: string, out: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const child = spawn(promtool, ['tsdb', 'create-blocks-from', 'openmetrics', `--max-block-duration=${formatDuration(BLOCK_SECONDS)}`, '--quiet', path, out], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr = (stderr + c.toString('utf8')).slice(-4000);
    });
    child.once('error', (e) => reject(new Error(`promtool could not be started (${promtool}): ${e.message}`)));
    child.once('exit', (code, signal) => {
      if (code === 0) {
        rmSync(path, { force: true });
        resolve(Number(process.hrtime.bigint() - t0) / 1e9);
      } else {
        const why = stderr.trim().split('\n').slice(-5).join('\n') || `exit ${String(code ?? signal)}`;
        reject(new Error(`promtool failed on ${path} (kept for inspection): ${why}`));
      }
    });
  });
}

/**
 * Replays every stack window by window, writing one OpenMetrics file per block window. promtool
 * turns a window's file into a block while the next window is written (two processes, two cores);
 * at most two window files are on disk at a time. `aborted` is checked between windows: the files
 * of an interrupted run are removed.
 */
export async function writeBlocks(opts: WriteOptions, aborted: () => boolean = () => false): Promise<WriteResult> {
  const { range, out, promtool } = opts;
  const replays: GroupReplay[] = opts.stacks.flatMap((stack, i) =>
    replayStack({ stack, history: opts.histories[i] as StackHistory, step: range.step, targetLabels: opts.targetLabels, debug: (msg, fields) => opts.logger.debug({ stack: stack.name, ...fields }, msg) }),
  );
  const result: WriteResult = { samples: 0, bytes: 0, files: 0, generateSeconds: 0, promtoolSeconds: 0 };
  const progress = new Progress('writing', range.to - range.from, 'seconds of history', opts.io.stderr);
  const work = promtool ? tmpdir() : out;
  let converting: { path: string; done: Promise<number> } | undefined;
  const settle = async () => {
    if (!converting) return;
    const c = converting;
    converting = undefined;
    result.promtoolSeconds += await c.done;
  };
  try {
    for (let w = Math.floor(range.from / BLOCK_SECONDS) * BLOCK_SECONDS; w <= range.to; w += BLOCK_SECONDS) {
      // A turn of the event loop per window: signals are handled here.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (aborted()) throw new Error('interrupted');
      const started = process.hrtime.bigint();
      const writer = new OpenMetricsWriter(BACKFILLED_FAMILIES, work);
      let path: string;
      try {
        const start = Math.max(range.from, w);
        const end = Math.min(range.to, w + BLOCK_SECONDS - 1);
        for (const replay of replays) {
          for (let t = Math.ceil(start / replay.step) * replay.step; t <= end; t += replay.step) {
            const suffix = ` ${t}\n`;
            replay.linesAt(t, (line) => writer.addLine(line.family, line.text + suffix));
          }
        }
        if (writer.total === 0) {
          writer.discard();
          progress.set(Math.min(range.to, w + BLOCK_SECONDS) - range.from);
          continue;
        }
        result.samples += writer.total;
        path = join(work, `cmdb-backfill-${iso(w).replace(/[:.]/g, '-')}.om`);
        result.bytes += writer.finish(path);
      } catch (e) {
        writer.discard();
        throw e;
      }
      result.files += 1;
      result.generateSeconds += Number(process.hrtime.bigint() - started) / 1e9;
      if (promtool) {
        await settle();
        converting = { path, done: promtoolRun(promtool, path, out) };
        // Handled when awaited; until then a failure must not count as unhandled.
        converting.done.catch(() => undefined);
      }
      progress.set(Math.min(range.to, w + BLOCK_SECONDS) - range.from);
    }
    await settle();
  } catch (e) {
    if (converting) {
      const c: { path: string; done: Promise<number> } = converting;
      await c.done.catch(() => undefined);
      rmSync(c.path, { force: true });
    }
    throw e;
  }
  progress.finish();
  return result;
}
