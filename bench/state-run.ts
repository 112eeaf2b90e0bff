/**
 * The state file at a benchmark size (issue 27): the exporter in this process (so that the event
 * loop measured is its own; the simulator runs in a child process) polls every endpoint once with
 * --storage.path, then its state is written SAMPLES times: the file's size, the wall time of a
 * write, its CPU (gzip in zlib's threads included) and the longest event-loop block meanwhile (the
 * figures of the median write by block). Then the exporter starts again from that directory: how
 * long start() takes to read and check the state, and until every restored series is applied.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { start, type App } from '../src/app.js';
import type { ExporterConfig } from '../src/config/types.js';
import { stateFileOf } from '../src/persist/state-file.js';
import { startChild } from './children.js';
import { timed } from './loop-delay.js';
import type { SimulatorReady } from './simulator-process.js';
import { BENCH_MAX_SERIES, RAISED_RATE, type BenchSize } from './sizes.js';
import { quietParts, simulatorStack } from './stack.js';

const STACK = 'bench';
const SAMPLES = 3;

function config(sim: SimulatorReady, dir: string): ExporterConfig {
  const track = { assets: [...sim.trackedAssets], users: [...sim.trackedUsers] };
  const stack = simulatorStack(sim, { name: STACK, rateLimitPerMinute: RAISED_RATE, actionJobsPerMinute: RAISED_RATE, track, maxSeries: BENCH_MAX_SERIES });
  return { listenAddress: '127.0.0.1:0', logLevel: 'silent', logFormat: 'json', enableReload: false, stacks: [stack], storagePath: dir };
}

async function app(cfg: ExporterConfig): Promise<App> {
  const { logger, scrubber } = quietParts();
  // Polled by hand (pollOnce): no scheduler, no server; the state writer runs as in the daemon.
  return start({ config: cfg, logger, scrubber, serve: false, schedule: false, defaultMetrics: false });
}

export async function benchState(size: BenchSize, progress: (line: string) => void = () => undefined) {
  const sim = await startChild('simulator-process.ts', [JSON.stringify(size.knobs)]);
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-bench-state-'));
  const cfg = config(sim.ready as SimulatorReady, dir);
  try {
    const first = await app(cfg);
    progress(`state (${size.name}): first poll`);
    await first.pollOnce();
    await first.store.settled();
    const series = first.store.seriesCount(STACK);
    await first.writeState?.(STACK);
    const writes = [];
    for (let i = 0; i < SAMPLES; i++) writes.push(await timed(async () => first.writeState?.(STACK)));
    if (writes.some((w) => !w.value)) throw new Error('the state was not written');
    writes.sort((a, b) => a.maxLoopDelayMs - b.maxLoopDelayMs);
    const median = writes[Math.floor(SAMPLES / 2)] as (typeof writes)[number];
    const fileBytes = statSync(stateFileOf(dir, STACK)).size;
    progress(`state (${size.name}): ${series} series, ${fileBytes} bytes, a write ${median.wallMs.toFixed(0)} ms, longest block ${median.maxLoopDelayMs.toFixed(1)} ms`);
    await first.close(0);

    const t0 = performance.now();
    const second = await app(cfg);
    const startMs = performance.now() - t0;
    await second.store.settled();
    const restoredMs = performance.now() - t0;
    const restoredSeries = second.store.seriesCount(STACK);
    await second.close(0);
    return { size: size.name, series, fileBytes, writeMs: median.wallMs, writeCpuMs: median.cpuMs, writeMaxBlockMs: median.maxLoopDelayMs, startMs, restoredMs, restoredSeries };
  } finally {
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
