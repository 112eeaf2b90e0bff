/**
 * One size, end to end: the simulator and the exporter each in a child process; three polls;
 * /metrics against a bare server serving the same bytes; a change swapped in, three times (the swap
 * stall); at the sizes chosen, scrapes while polls run.
 */
import { startChild, type Child } from './children.js';
import { compareWithBare, type BenchFormat } from './compare-run.js';
import { residentBytes } from './proc.js';
import type { BenchSettings, CompareFigures, ExporterInput, Memory, PollFigures, PollingScrape, PollRun, Progress, SizeResult, SwapFigures } from './results.js';
import { scrapeLoad } from './scrape-load.js';
import { requestLog, type SimulatorReady } from './simulator-process.js';
import { BENCH_MAX_SERIES, RAISED_RATE, SWAP_RUNS, type BenchSize } from './sizes.js';

/** `runs` changes swapped in one after the other (see exporter-process.ts swap). */
async function swapChanges(exporter: Child, runs: number, say: Progress): Promise<SwapFigures[]> {
  const out: SwapFigures[] = [];
  for (let i = 1; i <= runs; i++) {
    if (runs > 1) say(`swap ${i} of ${runs}`);
    out.push(await exporter.call<SwapFigures>('swap'));
  }
  return out;
}

/** The run whose data change had the median longest block (the lower median of an even count). */
export function medianSwap(runs: readonly SwapFigures[]): SwapFigures {
  const sorted = [...runs].sort((a, b) => a.data.maxLoopDelayMs - b.data.maxLoopDelayMs);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!median) throw new Error('no swap was measured');
  return median;
}

interface Exporter {
  readonly sim: SimulatorReady;
  readonly exporter: Child;
  readonly started: { readonly url: string; readonly memory: Memory };
  readonly say: Progress;
}

/**
 * The simulator at `size` and the exporter process polling it (budget raised, every series
 * exported), each in a process of its own; `cell` runs with both, then both stop. `nodeArgs` go to
 * the exporter's process (e.g. `--trace-gc`, whose lines are passed through to stderr).
 */
async function withExporter<T>(size: BenchSize, nodeArgs: readonly string[], progress: Progress, cell: (x: Exporter) => Promise<T>): Promise<T> {
  const say = (m: string) => progress(`[${size.name}] ${m}`);
  say('starting the simulator');
  const simChild = await startChild('simulator-process.ts', [JSON.stringify(size.knobs)]);
  const sim = simChild.ready as SimulatorReady;
  let exporter: Child | undefined;
  try {
    exporter = await startChild('exporter-process.ts', [], { exposeGc: true, nodeArgs });
    const input: ExporterInput = { ...sim, rateLimitPerMinute: RAISED_RATE, maxSeries: BENCH_MAX_SERIES };
    const started = await exporter.call<{ url: string; memory: Memory }>('start', input);
    return await cell({ sim, exporter, started, say });
  } finally {
    await exporter?.call('close').catch(() => undefined);
    await exporter?.stop();
    await simChild.stop();
  }
}

/** Clears the simulator's request log, runs the poll, and counts what reached the simulator. */
async function pollRun(sim: SimulatorReady, exporter: Child, advanceSeconds = 0): Promise<PollRun> {
  await requestLog(sim.url, 'clear');
  const figures = await exporter.call<PollFigures>('poll', { advanceSeconds });
  const log = await requestLog(sim.url);
  const requestsByEndpoint: Record<string, number> = {};
  for (const r of log) {
    const key = r.endpoint ?? 'unrouted';
    requestsByEndpoint[key] = (requestsByEndpoint[key] ?? 0) + 1;
  }
  if (!figures.ok) throw new Error(`poll failed for endpoints ${figures.failed.join(', ')}`);
  return { ...figures, requests: log.length, requestsByEndpoint };
}

/**
 * One client scrapes with gzip back to back while the exporter polls back to back, its clock five
 * minutes on at each poll (so every group is due, and the Action jobs' refresh once an hour).
 */
async function pollingScrape(url: string, exporter: Child, seconds: number): Promise<PollingScrape> {
  const pid = (exporter.ready as { pid: number }).pid;
  const [polls, cell] = await Promise.all([
    exporter.call<number>('pollLoop', { seconds, maxPolls: 10_000, advanceSeconds: 300 }),
    scrapeLoad({ url, clients: 1, gzip: true, maxRequests: 1_000_000, maxMs: seconds * 1000 }),
  ]);
  const peak = await residentBytes(pid);
  return { seconds, polls, latency: cell.latency, requests: cell.requests, errors: cell.errors, peakRssBytes: peak?.hwm ?? Number.NaN };
}

export async function benchSize(size: BenchSize, settings: BenchSettings, progress: Progress): Promise<SizeResult> {
  return withExporter(size, [], progress, async ({ sim, exporter, started, say }) => {
    say('first poll');
    const first = await pollRun(sim, exporter);
    say('repeat poll');
    const repeat = await pollRun(sim, exporter);
    say('poll one hour later');
    const hourLater = await pollRun(sim, exporter, 3600);
    const pid = (exporter.ready as { pid: number }).pid;
    const compare = await compareWithBare({ url: started.url, pid }, settings.compare, say);
    const formats: Partial<Record<BenchFormat, CompareFigures>> = {};
    for (const format of settings.formats ?? []) formats[format] = await compareWithBare({ url: started.url, pid }, settings.compare, say, format);
    // After the /metrics cells, so that their peak RSS (VmHWM since start) is not that of the swaps'
    // garbage: three swaps of 170k series reach ~630 MiB at the large size, one ~500 MiB.
    say(`a change swapped in, until the gzip response is ready (${SWAP_RUNS} runs)`);
    const swapRuns = await swapChanges(exporter, SWAP_RUNS, say);
    let polling: PollingScrape | undefined;
    if (settings.pollingSizes.includes(size.name)) {
      say(`scrapes while polls run, ${settings.pollingSeconds} s`);
      polling = await pollingScrape(started.url, exporter, settings.pollingSeconds);
    }
    const { connectors, connectorProfiles, connectorRuns, actions, actionJobs } = sim;
    return {
      size: size.name,
      data: { connectors, connectorProfiles, connectorRuns, actions, actionJobs, trackedNames: sim.trackedAssets.length + sim.trackedUsers.length },
      memoryAtStart: started.memory,
      first,
      repeat,
      hourLater,
      swap: medianSwap(swapRuns),
      swapRuns,
      formats,
      compare,
      ...(polling ? { pollingScrape: polling } : {}),
      memoryAfterScrapes: await exporter.call<Memory>('memory'),
      warnings: await exporter.call<string[]>('warnings'),
    };
  });
}

/**
 * The swap cell alone (`npm run bench -- --only swap`): one first poll to fill the store, then
 * `repeats` changes swapped in, each until its gzip response is ready; the exporter's VmHWM after.
 */
export async function benchSwapOnly(size: BenchSize, repeats: number, nodeArgs: readonly string[], progress: Progress) {
  return withExporter(size, nodeArgs, progress, async ({ sim, exporter, say }) => {
    say('first poll');
    const first = await pollRun(sim, exporter);
    const swaps = await swapChanges(exporter, repeats, say);
    return { size: size.name, first, swaps, peakRssBytes: await exporter.call<number | null>('peakRss') };
  });
}
