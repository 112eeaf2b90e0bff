/**
 * The connector-history cell: a ~100 MB run history (530 connectors × 72 runs per profile) polled
 * every 30 s by the scheduler, as the daemon runs, while one client scrapes /metrics back to back
 * with gzip. Reports the three goals of docs/performance.md: scrape p99 while polling, the
 * exporter's peak RSS (VmHWM), and the bytes of later polls as a share of the first.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { PageReducer, reduceConnectorPage } from '../src/cmdb/page-reducer.js';
import type { RequestRecord } from '../src/simulator/api.js';
import { startChild, type Child } from './children.js';
import type { ExporterInput, HistoryStalls } from './results.js';
import type { Stall as Span } from './loop-delay.js';
import { scrapeLoad } from './scrape-load.js';
import { requestLog, simulatorToken, type SimulatorReady } from './simulator-process.js';

export const HISTORY_KNOBS = { connectors: 530, runsPerConnector: 72 } as const;
export const HISTORY_SETTINGS = { connectorPageSize: 5000, connectorIntervalSeconds: 30 } as const;
export const HISTORY_GOALS = { scrapeP99Ms: 50, scrapeMaxMs: 150, peakRssBytes: 300 * 1024 * 1024, laterPollShare: 0.1 } as const;

/** Times one ~25 MB page both ways, in this (the benchmark's) process. */
async function measureBigPage(sim: SimulatorReady) {
  const token = await simulatorToken(sim);
  const res = await fetch(`${sim.url}/CMDB/v2/system/metrics/connector?page=0&size=20000`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  let t0 = performance.now();
  reduceConnectorPage(text);
  const inlineMs = performance.now() - t0;
  const reducer = new PageReducer(0);
  try {
    // Warm the worker up first: its start-up is paid once per process, not per page.
    const warm = reducer.beginScan();
    await warm.page(Buffer.from('{"content":[]}'));
    await warm.finish();
    const lag = monitorEventLoopDelay({ resolution: 5 });
    const body = Buffer.from(text);
    lag.enable();
    t0 = performance.now();
    const scan = reducer.beginScan();
    await scan.page(body);
    await scan.finish();
    const workerMs = performance.now() - t0;
    lag.disable();
    return { bytes: Buffer.byteLength(text), inlineMs, workerMs, workerMaxLagMs: lag.max / 1e6 };
  } finally {
    await reducer.close();
  }
}

/** A stall of the exporter's event loop with the process CPU meanwhile (bench/exporter-process.ts watchBlocks). */
type Stall = Required<Span>;

/** A stall is the exporter's own work when the process used the CPU for at least half of it. */
const own = (s: Stall) => s.cpuMs >= s.ms / 2;

/**
 * What held the slow scrapes up: the exporter's event-loop stalls, told apart by the CPU the
 * process used meanwhile. A stall with little CPU is the machine running other work (another
 * process had the core); one with CPU is the exporter's own (parsing, mapping, rendering, GC).
 */
export function stallsOf(stalls: readonly Stall[], slow: readonly Span[], clientStalls: readonly Span[] = []): HistoryStalls {
  const longest = (xs: readonly Stall[]) => xs.reduce<Stall | undefined>((a, s) => (a && a.ms >= s.ms ? a : s), undefined);
  const worst = slow.reduce<Span | undefined>((a, s) => (a && a.ms >= s.ms ? a : s), undefined);
  // How much of a scrape's time the given stalls took (their overlap with it, in ms).
  const within = (scrape: Span, xs: readonly { at: number; ms: number }[]) =>
    xs.reduce((n, x) => n + Math.max(0, Math.min(scrape.at + scrape.ms, x.at + x.ms) - Math.max(scrape.at, x.at)), 0);
  // A scrape less the time the scraper itself waited for a core: the exporter's answer time.
  const answerMs = slow.reduce((m, s) => Math.max(m, s.ms - within(s, clientStalls)), 0);
  // A scrape less every stall of either process during it: the time the exporter made it wait.
  const held = union([...stalls, ...clientStalls]);
  const waitMs = slow.reduce((m, s) => Math.max(m, s.ms - within(s, held)), 0);
  const all = longest(stalls);
  const mine = longest(stalls.filter(own));
  return {
    longestMs: all?.ms ?? 0,
    longestCpuMs: all?.cpuMs ?? 0,
    longestOwnMs: mine?.ms ?? 0,
    slowestScrapeMs: worst?.ms ?? 0,
    slowestScrapeOwnMs: worst ? within(worst, stalls.filter(own)) : 0,
    slowestScrapeOtherMs: worst ? within(worst, stalls.filter((s) => !own(s))) : 0,
    slowestScrapeClientMs: worst ? within(worst, clientStalls) : 0,
    overMaxGoal: slow.filter((s) => s.ms >= HISTORY_GOALS.scrapeMaxMs).length,
    slowestAnswerMs: answerMs,
    longestWaitMs: waitMs,
  };
}

/** Intervals as non-overlapping ones covering the same time. */
function union(xs: readonly { at: number; ms: number }[]): Array<{ at: number; ms: number }> {
  const out: Array<{ at: number; ms: number }> = [];
  for (const x of [...xs].sort((a, b) => a.at - b.at)) {
    const last = out[out.length - 1];
    if (last && x.at <= last.at + last.ms) last.ms = Math.max(last.ms, x.at + x.ms - last.at);
    else out.push({ at: x.at, ms: x.ms });
  }
  return out;
}

/** Connector requests grouped into polls: a poll starts with its page 0. */
export function connectorPolls(log: readonly Pick<RequestRecord, 'endpoint' | 'rawQuery' | 'bytes'>[]) {
  const polls: Array<{ requests: number; bytes: number }> = [];
  for (const r of log) {
    if (r.endpoint !== 'connector') continue;
    const last = polls[polls.length - 1];
    const current = /(?:^|&)page=0(?:&|$)/.test(r.rawQuery) || !last ? { requests: 0, bytes: 0 } : last;
    if (current !== last) polls.push(current);
    current.requests += 1;
    current.bytes += r.bytes;
  }
  return polls;
}

export async function benchHistory(seconds: number, progress: (m: string) => void, nodeArgs: readonly string[] = []) {
  progress(`history: building ${HISTORY_KNOBS.connectors} connectors × ${HISTORY_KNOBS.runsPerConnector} runs`);
  const simulator = await startChild('simulator-process.ts', [JSON.stringify(HISTORY_KNOBS)]);
  let exporter: Child | undefined;
  try {
    const sim = simulator.ready as SimulatorReady;
    exporter = await startChild('exporter-process.ts', [], { nodeArgs });
    const input: ExporterInput = { ...sim, rateLimitPerMinute: 600, maxSeries: 1_000_000, history: HISTORY_SETTINGS };
    progress(`history: ${sim.connectorRuns} runs; scraping for ${seconds} s from start-up`);
    await exporter.call('watchBlocks');
    const { url } = await exporter.call<{ url: string }>('start', input);
    const cell = await scrapeLoad({ url, clients: 1, gzip: true, maxRequests: 1_000_000, maxMs: seconds * 1000, slowerThanMs: HISTORY_GOALS.scrapeP99Ms });
    const peakRssBytes = await exporter.call<number | null>('peakRss');
    const stalls = stallsOf(await exporter.call<Stall[]>('blocks'), cell.slow, cell.clientStalls);
    const polls = connectorPolls(await requestLog(sim.url));
    const first = polls[0]?.bytes;
    const laterPollShare = first && polls.length > 1 ? Math.max(...polls.slice(1).map((p) => p.bytes)) / first : null;
    progress('history: one 20,000-row page, inline and in the worker');
    const bigPage = await measureBigPage(sim);
    return { runs: sim.connectorRuns, seconds, scrape: cell.latency, scrapes: cell.requests, peakRssBytes, polls, laterPollShare, bigPage, stalls };
  } finally {
    await exporter?.call('close').catch(() => undefined);
    await exporter?.stop();
    await simulator.stop();
  }
}

const mb = (b: number | null) => (b === null ? 'n/a' : `${(b / 1024 ** 2).toFixed(1)} MB`);

/** The three figures, each with its goal beside it. */
export function historyLines(r: Awaited<ReturnType<typeof benchHistory>>): string[] {
  const share = r.laterPollShare;
  const ok = (pass: boolean | null) => (pass === null ? 'not measured' : pass ? 'met' : 'NOT met');
  const st = r.stalls;
  // Only scrapes slower than the p99 goal are recorded: below it, the figure is "under" the goal.
  const under = (x: number) => (x < HISTORY_GOALS.scrapeP99Ms ? `under ${HISTORY_GOALS.scrapeP99Ms}` : x.toFixed(1));
  return [
    `Connector history: ${r.runs} runs, ${r.polls.length} connector polls in ${r.seconds} s, ${r.scrapes} gzip scrapes`,
    `  scrape p99 while polling: ${r.scrape.p99.toFixed(1)} ms (max ${r.scrape.max.toFixed(1)} ms)  goal < ${HISTORY_GOALS.scrapeP99Ms} ms: ${ok(r.scrape.p99 < HISTORY_GOALS.scrapeP99Ms)}; max goal < ${HISTORY_GOALS.scrapeMaxMs} ms: ${ok(r.scrape.max < HISTORY_GOALS.scrapeMaxMs)}`,
    `  slowest answer, less the scraper's own waits for a core: ${under(st.slowestAnswerMs)} ms  goal < ${HISTORY_GOALS.scrapeMaxMs} ms: ${ok(st.slowestAnswerMs < HISTORY_GOALS.scrapeMaxMs)}`,
    `  longest a scrape waited with neither event loop held (on the exporter: the store, its threads): ${under(st.longestWaitMs)} ms`,
    `  exporter's event-loop stalls: longest ${st.longestMs.toFixed(0)} ms (${st.longestCpuMs.toFixed(0)} ms of CPU in it), longest of its own work ${st.longestOwnMs.toFixed(0)} ms; ${st.overMaxGoal} scrape(s) of ${HISTORY_GOALS.scrapeMaxMs} ms or more; the slowest met ${st.slowestScrapeOwnMs.toFixed(0)} ms of the exporter's own work, ${st.slowestScrapeOtherMs.toFixed(0)} ms of the exporter waiting for a core and ${st.slowestScrapeClientMs.toFixed(0)} ms of the scraper waiting for one`,
    `  peak RSS (VmHWM): ${mb(r.peakRssBytes)}  goal < ${mb(HISTORY_GOALS.peakRssBytes)}: ${ok(r.peakRssBytes === null ? null : r.peakRssBytes < HISTORY_GOALS.peakRssBytes)}`,
    `  later polls read: ${share === null ? 'n/a' : `${(share * 100).toFixed(1)} %`} of the first  goal < ${HISTORY_GOALS.laterPollShare * 100} %: ${ok(share === null ? null : share < HISTORY_GOALS.laterPollShare)}`,
    `  polls: ${r.polls.map((p) => `${p.requests} req / ${mb(p.bytes)}`).join(', ')}`,
    `  one ${mb(r.bigPage.bytes)} page: parsed on the event loop ${r.bigPage.inlineMs.toFixed(0)} ms blocked; in the worker ${r.bigPage.workerMs.toFixed(0)} ms with the event loop held at most ${r.bigPage.workerMaxLagMs.toFixed(1)} ms`,
  ];
}
