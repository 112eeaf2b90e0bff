/**
 * The exporter under measurement, in its own process (started with --expose-gc by bench/run.ts):
 * its CPU, heap and RSS are the exporter's alone. It prints one ready line, then answers commands
 * over the IPC channel (see Commands); the figures it returns are measured here, in-process.
 */
import { Writable } from 'node:stream';
import { start, type App } from '../src/app.js';
import type { Sample } from '../src/metrics/sample.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { ExporterConfig, StackConfig } from '../src/config/types.js';
import { createLogger } from '../src/logger.js';
import { SecretScrubber } from '../src/secrets.js';
import { loopDelay, timed, watchStalls } from './loop-delay.js';
import { residentBytes } from './proc.js';
import type { ChangeFigures, ExporterInput, Memory, PollFigures, SwapFigures } from './results.js';
import { simulatorStack } from './stack.js';

const STACK = 'bench';

let app: App | undefined;
/** Added to the exporter's clock, to poll "an hour later" without waiting an hour. */
let clockOffsetMs = 0;
const warnings = new Set<string>();

function stackConfig(input: ExporterInput): StackConfig {
  const { paging, intervals } = BUILTIN_SETTINGS;
  const h = input.history;
  const history = h && { paging: { ...paging, connectorPageSize: h.connectorPageSize }, intervals: { ...intervals, connectors: h.connectorIntervalSeconds } };
  const track = { assets: input.trackedAssets, users: input.trackedUsers };
  return simulatorStack(input, { ...history, name: STACK, rateLimitPerMinute: input.rateLimitPerMinute, track, maxSeries: input.maxSeries });
}

/** Keeps the distinct warning and error messages; the raised rate budget's own warning is expected. */
function warningSink(): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        const entry = JSON.parse(line) as { level?: string; msg?: string; key?: string };
        if (entry.key !== 'rateLimitPerMinute') warnings.add(`${entry.level ?? '?'}: ${entry.msg ?? line}`);
      }
      done();
    },
  });
}

function memory(): Memory {
  // Only defined under --expose-gc; without it the figures include garbage not yet collected.
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const m = process.memoryUsage();
  return { rssBytes: m.rss, heapUsedBytes: m.heapUsed, externalBytes: m.external, afterGc: gc !== undefined };
}

function running(): App {
  if (!app) throw new Error('the exporter has not been started');
  return app;
}

function seriesIn(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) if (line !== '' && !line.startsWith('#')) n++;
  return n;
}

async function startExporter(input: ExporterInput): Promise<{ url: string; memory: Memory }> {
  const scrubber = new SecretScrubber();
  const logger = createLogger({ level: 'warn', format: 'json', scrubber, destination: warningSink() });
  const config: ExporterConfig = { listenAddress: '127.0.0.1:0', logLevel: 'warn', logFormat: 'json', enableReload: false, stacks: [stackConfig(input)] };
  // The history cell runs the scheduler as the daemon does; the other cells poll by command.
  const schedule = input.history !== undefined;
  app = await start({ config, logger, scrubber, nowMs: () => Date.now() + clockOffsetMs, schedule, serve: true, defaultMetrics: true });
  if (!app.url) throw new Error('the exporter did not report its URL');
  return { url: app.url, memory: memory() };
}

/** cmdb_rate_limit_wait_seconds_total: shows whether the request budget held a poll back. */
async function budgetWaitSeconds(a: App): Promise<number> {
  const metric = a.registries.stack(STACK)?.getSingleMetric('cmdb_rate_limit_wait_seconds_total');
  const values = metric ? (await metric.get()).values : [];
  return values.reduce((sum, v) => sum + v.value, 0);
}

async function poll(args: { advanceSeconds?: number }): Promise<PollFigures> {
  const a = running();
  clockOffsetMs += (args.advanceSeconds ?? 0) * 1000;
  const wait0 = await budgetWaitSeconds(a);
  const { value: ok, wallMs, cpuMs, maxLoopDelayMs, blockAt } = await timed(async () => {
    const done = await a.pollOnce();
    await a.store.settled();
    return done;
  });
  markEnd('poll', blockAt, maxLoopDelayMs);
  const budgetWait = (await budgetWaitSeconds(a)) - wait0;
  // The exposition is rendered lazily, on the first scrape after a change: time that separately.
  const r0 = performance.now();
  const text = await a.metricsText();
  const renderMs = performance.now() - r0;
  const endpoints = a.landing().stacks.flatMap((s) => s.endpoints);
  const failed = endpoints.filter((e) => e.state !== 'ok').map((e) => e.endpoint);
  const seriesByEndpoint: Record<string, number> = {};
  for (const e of endpoints) seriesByEndpoint[e.endpoint] = a.store.snapshot(STACK, e.endpoint)?.samples.length ?? 0;
  return {
    ok,
    failed,
    wallMs,
    cpuMs,
    budgetWaitSeconds: budgetWait,
    renderMs,
    cmdbSeries: a.store.seriesCount(STACK),
    seriesByEndpoint,
    exposedSeries: seriesIn(text),
    textBytes: Buffer.byteLength(text),
    memory: memory(),
    maxLoopDelayMs,
  };
}

/** The gzip response as /metrics serves it. */
async function gzipResponse(a: App): Promise<void> {
  await (await a.metrics()).gzip();
}

/** Under --trace-gc (bench --trace-gc), marks where a measured change starts and ends among its lines. */
const mark = process.execArgv.includes('--trace-gc') ? (text: string) => process.stdout.write(`--- ${text}\n`) : () => undefined;

/** The end of a measured stretch, and where its longest block began (also in µs of the monotonic clock, which --cpu-prof's timestamps use). */
function markEnd(what: string, blockAt: number, maxLoopDelayMs: number): void {
  const monotonicUs = Number(process.hrtime.bigint() / 1000n) + (blockAt - performance.now()) * 1000;
  mark(`${what}: end, longest block ${maxLoopDelayMs.toFixed(1)} ms from ${blockAt.toFixed(0)} ms (monotonic ${monotonicUs.toFixed(0)} µs)`);
}

async function change(a: App, series: number, update: () => void): Promise<ChangeFigures> {
  await gzipResponse(a);
  mark(`change of ${series} series: start`);
  const { wallMs, cpuMs, maxLoopDelayMs, blockAt } = await timed(async () => {
    update();
    await a.store.settled();
    await gzipResponse(a);
  });
  markEnd(`change of ${series} series`, blockAt, maxLoopDelayMs);
  return { series, wallMs, cpuMs, maxLoopDelayMs };
}

/**
 * A data change: the largest endpoint's series swapped in again with every value changed (as a poll
 * that changed everything would), until the gzip response is ready; then a status-only change.
 */
async function swap(): Promise<SwapFigures> {
  const a = running();
  const now = () => (Date.now() + clockOffsetMs) / 1000;
  const endpoints = a.landing().stacks.flatMap((s) => s.endpoints.map((e) => e.endpoint));
  const largest = endpoints.reduce((best, e) => ((a.store.snapshot(STACK, e)?.samples.length ?? 0) > (a.store.snapshot(STACK, best)?.samples.length ?? 0) ? e : best));
  const held = a.store.snapshot(STACK, largest)?.samples ?? [];
  const changed: Sample[] = held.map((s) => ({ name: s.name, labels: s.labels, value: s.value + 1 }));
  // A poll's samples are made while it runs, and the young generation's collections during the poll
  // move them to the old generation before they are swapped in. Two young collections do that here,
  // so that copying the benchmark's own input is not counted as the exporter's stall.
  const gc = (globalThis as { gc?: (options: { type: 'minor' }) => void }).gc;
  gc?.({ type: 'minor' });
  gc?.({ type: 'minor' });
  const idleMaxLoopDelayMs = await idleLoopDelay();
  const data = await change(a, changed.length, () => a.store.succeed(STACK, largest, changed, now()));
  const status = await change(a, 0, () => a.store.confirm(STACK, largest, now() + 1));
  return { data, status, idleMaxLoopDelayMs };
}

/** How long the idle window before a swap lasts: about as long as a swap at the large size. */
const IDLE_WINDOW_MS = 2000;

/**
 * The longest block while the exporter does nothing (no scrape, no poll) for IDLE_WINDOW_MS: what a
 * busy machine alone costs the timer chain (the scheduler runs other processes on the cores), the
 * floor under the swap's figure.
 */
async function idleLoopDelay(): Promise<number> {
  const lag = loopDelay();
  await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
  return lag.stop();
}

/** The event loop's stalls with the CPU the process used in each (bench/history-run.ts stallsOf tells them apart). */
let stalls: ReturnType<typeof watchStalls> | undefined;

/** Polls back to back, the clock moving on `advanceSeconds` each time, for `seconds` or `maxPolls`. */
async function pollLoop(args: { seconds: number; maxPolls: number; advanceSeconds: number }): Promise<number> {
  const a = running();
  const deadline = performance.now() + args.seconds * 1000;
  let polls = 0;
  while (polls < args.maxPolls && performance.now() < deadline) {
    clockOffsetMs += args.advanceSeconds * 1000;
    await a.pollOnce();
    polls++;
  }
  return polls;
}

const commands: Record<string, (args: never) => Promise<unknown>> = {
  start: startExporter,
  poll,
  swap,
  pollLoop,
  watchBlocks: async () => void (stalls = watchStalls(true)),
  blocks: async () => stalls?.stop() ?? [],
  memory: async () => memory(),
  // VmHWM of this process (Linux): the peak resident set since it started.
  peakRss: async () => (await residentBytes(process.pid))?.hwm ?? null,
  warnings: async () => [...warnings],
  // The process itself ends on SIGTERM from the benchmark, after this answer has been sent.
  close: async () => {
    await app?.close(0);
    app = undefined;
  },
};

process.on('message', (message: { id: number; command: string; args?: unknown }) => {
  const run = Object.hasOwn(commands, message.command) ? commands[message.command] : undefined;
  const answer = run ? run(message.args as never) : Promise.reject(new Error(`unknown command ${message.command}`));
  answer.then(
    (result) => process.send?.({ id: message.id, ok: true, result }),
    (err: unknown) => process.send?.({ id: message.id, ok: false, error: err instanceof Error ? err.message : String(err) }),
  );
});
// Never outlive the benchmark that started it.
process.once('disconnect', () => void (app?.close(0) ?? Promise.resolve()).finally(() => process.exit(0)));
// An orderly exit on the benchmark's SIGTERM, so that Node options such as --cpu-prof write their files.
process.once('SIGTERM', () => process.exit(0));
process.stdout.write(`${JSON.stringify({ pid: process.pid })}\n`);
