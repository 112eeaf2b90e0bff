/**
 * One backfill after its flags and configuration are checked (command.ts): the state in --out
 * (continue the same command, or start), the instance label and the ranges (the whole range, or
 * the gaps a Prometheus shows), the target's check, the reading, the writing, and the summary that
 * says what was read, what was written, what is missing and how to continue.
 */
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import { continueCommand } from './again.js';
import { AnswerJournal } from './answers.js';
import type { StackHistory } from './history.js';
import { BlocksSink } from './blocks.js';
import { tokenNote } from './borrowed-token.js';
import { fineRanges, searchedRange, searchedText, searchStack, type Ranges, type Searched } from './fill.js';
import { liveInstances } from './instance.js';
import { formatPlan, planStack } from './plan.js';
import type { PrometheusApi } from './prometheus-api.js';
import { daysOf, readStacks, type ReadAll } from './read.js';
import { RemoteWriteClient, RemoteWriteError } from './remote-write.js';
import { shownUrl, type RemoteWriteSettings } from './remote-write-settings.js';
import { RemoteWriteSink } from './remote-write-sink.js';
import { headBlockWarning, type BackfillRange } from './range.js';
import { replayStack } from './replay.js';
import { BackfillState, type Fingerprint } from './state.js';
import { stopOnSignals, type StopSignals } from './stop.js';
import { describeMissing, rangeText } from './summary.js';
import { checkTarget, TargetRefusal } from './target-check.js';
import type { MissingUnit } from './unit-reader.js';
import { writeWindows, type Sink, type WriteResult } from './write.js';
import { formatDuration } from '../config/durations.js';

export interface SessionOptions {
  /** The backfill's flags, and the program and environment variables it was started with: the command to continue (again.ts). */
  readonly argv: readonly string[];
  readonly program: readonly string[];
  readonly environment: readonly string[];
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly now: number;
  readonly stacks: readonly StackConfig[];
  readonly range: BackfillRange;
  readonly out: string;
  readonly job: string;
  readonly instance: string | undefined;
  /** The address /sd hands out, and how it was found. */
  readonly sdInstance: { readonly address: string; readonly from: string };
  readonly prometheus: PrometheusApi | undefined;
  readonly fillGaps: boolean;
  readonly remote: RemoteWriteSettings | undefined;
  readonly promtool: string | undefined;
  /** The daemon's --storage.path, read only: its token is used (borrowed-token.ts). */
  readonly storagePath: string | undefined;
  readonly fingerprint: Fingerprint;
  readonly logger: Logger;
  readonly scrubber: SecretScrubber;
}

/** What every step of a session says through, and how it is stopped. */
interface Io {
  readonly o: SessionOptions;
  readonly stop: StopSignals;
  readonly say: (t: string) => void;
  readonly err: (t: string) => void;
  /** The same command, to continue. */
  readonly again: string;
}

export async function runSession(o: SessionOptions): Promise<number> {
  const err = (text: string) => o.stderr.write(`cmdb-exporter backfill: ${text}\n`);
  // From here on a signal stops the backfill cleanly, whatever it is doing.
  const stop = stopOnSignals((text) => err(text));
  try {
    return await session({ o, stop, err, say: (text) => o.stdout.write(`${text}\n`), again: continueCommand(o.program, o.argv, o.environment) });
  } finally {
    stop.dispose();
  }
}

async function session(io: Io): Promise<number> {
  const { o, stop, say, err, again } = io;
  // Before anything else: a target that would refuse or drop the range is said at once.
  let sink: Sink;
  if (o.remote) {
    const retryFor = formatDuration(o.remote.retryForSeconds);
    const client = new RemoteWriteClient(o.remote, {
      // The first retry of a request and then every doubling: a target down for minutes is not a line per attempt.
      onRetry: (n) => {
        if ((n.attempt & (n.attempt - 1)) === 0) err(`remote write: ${n.what}: ${n.why}; asking again in ${formatDuration(Math.ceil(n.waitMs / 1000))} (attempt ${n.attempt + 1}, for up to ${retryFor}: --remote-write.retry-for)`);
      },
    });
    try {
      say(`target: ${(await checkTarget(client, { oldestSeconds: o.range.from, now: o.now, statusUrl: o.prometheus?.url, stopping: stop.signal })).note}`);
    } catch (e) {
      await client.close();
      if (e instanceof TargetRefusal) {
        err(e.message);
        return 2;
      }
      if (!(e instanceof RemoteWriteError)) throw e;
      // Down or restarting the whole time: not the flags' fault, and nothing was sent.
      err(`--remote-write.url: ${e.message}`);
      say(`nothing was read or written.\nto continue: ${again}`);
      return stop.signal.aborted ? 130 : 1;
    }
    sink = new RemoteWriteSink(client);
  } else sink = new BlocksSink(o.out, o.promtool);
  try {
    const searched = await blocksTarget(o, err);
    if (searched === 'refused') return 2;
    const state = BackfillState.open(o.out, o.fingerprint);
    const journal = new AnswerJournal(o.out);
    try {
      return await readAndWrite({ ...io, sink, state, journal, searched });
    } finally {
      journal.close();
    }
  } finally {
    await sink.close(true);
  }
}

interface Context extends Io {
  readonly sink: Sink;
  readonly state: BackfillState;
  readonly journal: AnswerJournal;
  /** What a --fill-gaps run searches. */
  readonly searched: Searched;
}

/**
 * Blocks into a Prometheus (--prometheus.url): its version says whether a block overlapping its
 * head is a problem (before 2.39), and its retention how far back blocks are kept: a range older is
 * refused, or with --fill-gaps not searched (said). What a --fill-gaps run searches; 'refused'.
 */
async function blocksTarget(o: SessionOptions, err: (t: string) => void): Promise<Searched | 'refused'> {
  const blocks = o.remote === undefined;
  const status = blocks && o.prometheus ? await o.prometheus.status() : undefined;
  const head = blocks ? headBlockWarning(o.range, status?.version) : undefined;
  if (head) err(`warning: ${head}`);
  if (status && !o.fillGaps && o.range.from < o.now - status.retentionSeconds) {
    const keep = formatDuration(status.retentionSeconds);
    err(
      `--from: ${new Date(o.range.from * 1000).toISOString()} is older than ${o.prometheus?.url} keeps (Prometheus ${status.version}, --storage.tsdb.retention.time ${keep}): it deletes blocks older than that at once. Raise its retention, or give --from ${keep} or later`,
    );
    return 'refused';
  }
  return searchedRange({ ...o.range, now: o.now, blocks, ...(status ? { retentionSeconds: status.retentionSeconds } : {}), ...(o.prometheus ? { url: o.prometheus.url } : {}) });
}

async function readAndWrite(c: Context): Promise<number> {
  const { o, stop, say, state, journal, searched } = c;
  if (!state.resumed) journal.remove();
  if (state.complete) {
    say(`this backfill is complete (${state.path}): nothing to read or write. Remove that file to run it again.`);
    return 0;
  }
  if (state.resumed) say(`continuing the backfill in ${o.out}: ${journal.size} answers read and ${state.totals().windows} windows written before${pagesKept(journal, 'its scan goes on after them')}`);

  const instances = await instanceLabels(o, state, say);
  const { ranges, intervals } = await rangesOf(o, state, instances, say, searched);
  state.plan(Object.fromEntries(ranges), { ...Object.fromEntries([...instances].map(([s, i]) => [`instance/${s}`, i])), ...Object.fromEntries([...intervals].map(([s, i]) => [`interval/${s}`, String(i)])) });
  state.save();
  const stacks = o.stacks.filter((s) => (ranges.get(s.name) ?? []).length > 0);
  if (stacks.length === 0) {
    say(`no gaps (${searchedText(searched)}): nothing to read or write`);
    state.finish(true);
    journal.remove();
    return 0;
  }
  const span = (name: string) => {
    const r = ranges.get(name) ?? [];
    return { from: Math.min(...r.map((x) => x[0])), to: Math.max(...r.map((x) => x[1])), days: daysOf(r).length };
  };
  const plans = stacks.map((s) => planStack(s, span(s.name).from, span(s.name).to, span(s.name).days));
  for (const p of plans) say(formatPlan(p, span(p.stack)));

  const note = tokenNote(stacks, o.storagePath);
  if (note) say(note);
  const read = await readStacks({ stacks, ranges, plans, journal, logger: o.logger, scrubber: o.scrubber, signal: stop.signal, progressOut: o.stderr, ...(o.storagePath !== undefined ? { storagePath: o.storagePath } : {}) });
  if ('stopped' in read) {
    say(
      `stopped (${stop.why}) while reading: ${journal.readThisRun} answers read by this run and ${journal.size - journal.readThisRun} before are kept in ${journal.path}` +
        ` (${read.requests} requests sent)${pagesKept(journal, 'the next run goes on after them')}; nothing was written by this run.\nto continue: ${c.again}`,
    );
    return 130;
  }
  return writeAndReport(c, stacks, ranges, instances, intervals, read);
}

async function writeAndReport(c: Context, stacks: readonly StackConfig[], ranges: ReadonlyMap<string, Ranges>, instances: ReadonlyMap<string, string>, intervals: ReadonlyMap<string, number>, read: ReadAll): Promise<number> {
  const { o, state, journal, say, again } = c;
  const missing = new Map<string, readonly MissingUnit[]>(stacks.map((s, i) => [s.name, read.histories[i]?.missing ?? []]));
  const missingNow = new Set([...missing].flatMap(([stack, units]) => units.map((u) => `${stack}:${u.key}`)));
  let result: WriteResult;
  try {
    result = await writeWindows({
      stacks: stacks.map((stack, i) => ({
        stack: stack.name,
        ranges: ranges.get(stack.name) ?? [],
        coverageLabels: { job: o.job, instance: instances.get(stack.name) as string, stack: stack.name },
        // --fill-gaps: a gap at the target's scrape interval, as a scrape would have left it (fill.ts).
        ...(intervals.has(stack.name) && o.range.step === undefined ? { fine: { step: intervals.get(stack.name) as number, ranges: fineRanges(ranges.get(stack.name) ?? []) } } : {}),
        replays: replayStack({
          stack,
          history: read.histories[i] as StackHistory,
          step: o.range.step,
          targetLabels: { job: o.job, instance: instances.get(stack.name) as string },
          debug: (msg, fields) => o.logger.debug({ stack: stack.name, ...fields }, msg),
        }),
      })),
      sink: c.sink,
      state,
      missingNow,
      stopping: c.stop.signal,
      progressOut: o.stderr,
    });
  } catch (e) {
    c.err(`writing failed: ${o.scrubber.scrub((e as Error).message)}`);
    say(`${writtenLine(state, c.sink, undefined)}\nto continue (after fixing the cause): ${again}`);
    return 1;
  }
  const lines = [`requests: ${read.requests} in ${formatDuration(Math.round(read.seconds))} (answers: ${journal.readThisRun} read by this run, ${journal.size - journal.readThisRun} from earlier runs)`, writtenLine(state, c.sink, result)];
  if (o.fillGaps) lines.unshift(`gaps filled: ${[...ranges.values()].flat().length} (${formatDuration(Math.round([...ranges.values()].flat().reduce((n, [a, b]) => n + b - a + 1, 0)))}), ${searchedText(c.searched)}`);
  const missingLines = stacks.flatMap((s) => describeMissing(s.name, missing.get(s.name) ?? [], rangeText(ranges.get(s.name) ?? [])));
  if (missingLines.length > 0) lines.push('missing (no samples where the CMDB did not answer; run the same command again to read only these):', ...missingLines.map((l) => `  ${l}`));
  for (const [i, s] of stacks.entries()) {
    const stopped = read.histories[i]?.stopped;
    if (stopped) lines.push(`stack ${s.name}: reading stopped early: ${stopped.why}. ${stopped.hint}`);
  }
  if (result.stopped) {
    say([...lines, `stopped (${c.stop.why}) while writing: the windows written are recorded in ${state.path}.`, `to continue: ${again}`].join('\n'));
    return 130;
  }
  const complete = missingLines.length === 0;
  state.finish(complete);
  if (complete) journal.remove();
  lines.push(state.totals().samples === 0 ? 'nothing was written: there are no samples for the range (see what is missing above)' : nextStep(o));
  if (!complete) lines.push(`to read what is missing: ${again}`);
  say(lines.join('\n'));
  return complete ? 0 : 1;
}

/** The pages of a connector history scan stopped partway, when the journal keeps any. */
function pagesKept(journal: AnswerJournal, then: string): string {
  const n = journal.pendingPages;
  return n === 0 ? '' : `, with the ${n} page${n === 1 ? '' : 's'} of the connector history read so far: ${then}`;
}

function writtenLine(state: BackfillState, sink: Sink, result: WriteResult | undefined): string {
  const totals = state.totals();
  const before = result ? `; ${result.skipped} window(s) written before were left as they are` : '';
  const rss = `peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`;
  if (sink instanceof RemoteWriteSink) {
    const now = result ? `${result.samples} samples in ${sink.requests} request(s) (${sink.bytes} bytes, ${sink.retries} retried), ${result.generateSeconds.toFixed(1)}s replaying, ${rss}` : `${sink.requests} request(s) taken`;
    return `remote write: ${now}${before}; all runs: ${totals.samples} samples in ${totals.windows} window(s)`;
  }
  const blocks = sink as BlocksSink;
  const now = result ? `openmetrics: ${result.samples} samples, ${result.bytes} bytes in ${blocks.files} file(s), ${result.generateSeconds.toFixed(1)}s, ${rss}` : `openmetrics: ${blocks.files} file(s)`;
  const promtool = blocks.runs > 0 ? `; promtool: ${blocks.runs} run(s) in ${blocks.promtoolSeconds.toFixed(1)}s` : '';
  return `${now}${promtool}${before}; all runs: ${totals.samples} samples in ${totals.windows} window(s)`;
}

function nextStep(o: SessionOptions): string {
  if (o.remote) return `the samples are in ${shownUrl(o.remote.url)}`;
  if (!o.promtool) return `promtool not found: the OpenMetrics files are in ${o.out}; turn them into blocks with\n  ${BlocksSink.commandFor(o.out)}`;
  return `blocks in ${o.out} (6 h each, aligned to UTC days); next: copy them into Prometheus's data directory, or upload them to Mimir or Thanos (docs/backfill.md)`;
}

/** The instance label per stack: --instance, the state's, the live target's, or /sd's address. */
async function instanceLabels(o: SessionOptions, state: BackfillState, say: (t: string) => void): Promise<Map<string, string>> {
  const names = o.stacks.map((s) => s.name);
  const given = o.instance;
  if (given !== undefined) return new Map(names.map((n) => [n, given]));
  const kept = names.map((n) => state.resolved(`instance/${n}`));
  if (kept.every((i) => i !== undefined)) return new Map(names.map((n, i) => [n, kept[i] as string]));
  const out = new Map<string, string>();
  const live = o.prometheus ? await liveInstances(o.prometheus, o.job, names) : undefined;
  for (const n of names) {
    const found = live?.get(n);
    out.set(n, found ?? o.sdInstance.address);
    say(
      found
        ? `instance label of stack ${n}: ${found} (the live target of job ${o.job} in ${o.prometheus?.url})`
        : `instance label of stack ${n}: ${o.sdInstance.address} (the address /sd hands out: ${o.sdInstance.from}${o.prometheus ? `; ${o.prometheus.url} has no target of job ${o.job}` : ''}); give --instance if Prometheus names the target otherwise`,
    );
  }
  return out;
}

/** The ranges per stack (the state's, the gaps Prometheus shows, or the whole range), and the scrape interval of each stack whose gaps they are. */
async function rangesOf(o: SessionOptions, state: BackfillState, instances: ReadonlyMap<string, string>, say: (t: string) => void, searched: Searched): Promise<{ ranges: Map<string, Ranges>; intervals: Map<string, number> }> {
  const ranges = new Map<string, Ranges>();
  const intervals = new Map<string, number>();
  for (const stack of o.stacks) {
    const kept = state.ranges(stack.name);
    const keptInterval = Number(state.resolved(`interval/${stack.name}`));
    if (kept) {
      ranges.set(stack.name, kept);
      if (keptInterval > 0) intervals.set(stack.name, keptInterval);
      continue;
    }
    if (!o.fillGaps || !o.prometheus) {
      ranges.set(stack.name, [[o.range.from, o.range.to]]);
      continue;
    }
    const found = await searchStack(o.prometheus, { job: o.job, instance: instances.get(stack.name) as string, stack: stack.name, searched, now: o.now, stepFlag: o.range.step }, say);
    ranges.set(stack.name, found.ranges);
    intervals.set(stack.name, found.interval);
  }
  return { ranges, intervals };
}
