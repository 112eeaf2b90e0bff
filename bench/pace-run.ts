/**
 * `npm run bench -- --only pace`: the connector history at the real service's pace (issue 21). The
 * simulator serves ~8,000 runs (1,000 connectors × 2 profiles × 4 daily runs, about the 7,425 rows of
 * a busy real stack) at ~2.3 s per 100 rows plus a 0.6 s round trip, so a 2,000-row page takes ~47 s,
 * over the default 30 s timeout. The exporter's client reads it with the built-in defaults.
 *
 * Reported: the time to the first connector data (the first full scan), the pages and bytes it
 * read, the bytes of an incremental poll 5 minutes later (the runs of those 5 minutes are new), and
 * the bytes a day at the defaults (one full scan a day, an incremental poll every 5 minutes).
 */
import { startSimulator } from '../src/simulator/server.js';
import { quietRoad, simulatorStack } from './stack.js';

export interface PaceOptions {
  readonly msPerRow: number;
  readonly baseMs: number;
  /** Give up on the first full scan after this long (the code before issue 21 never finishes it). */
  readonly maxSeconds: number;
}

export const PACE_SIZE = { connectors: 1000, profilesPerConnector: 2, runsPerConnector: 4 } as const;

/**
 * The cell. firstDataSeconds: to the first connector data, undefined when the scan failed or ran out
 * of time (firstError says which); bytesPerDay: one full scan and 288 incremental polls (the
 * defaults: 24 h, 5 min).
 */
export async function benchPace(opts: PaceOptions, progress: (line: string) => void = () => undefined) {
  const sim = await startSimulator({ size: PACE_SIZE, connectorPeriodSeconds: 86_400, connectorPace: { msPerRow: opts.msPerRow, baseMs: opts.baseMs } });
  const stack = simulatorStack(sim, { name: 'pace' });
  const road = quietRoad(stack);
  const connectorBytes = () => sim.requests().filter((r) => r.endpoint === 'connector').reduce((n, r) => n + r.bytes, 0);
  const connectorRequests = () => sim.requests().filter((r) => r.endpoint === 'connector').length;
  try {
    const rows = sim.state().counts.connectorRuns;
    progress(`pace: ${rows} runs at ${opts.msPerRow} ms a row + ${opts.baseMs} ms a page`);
    const t0 = performance.now();
    const deadline = AbortSignal.timeout(opts.maxSeconds * 1000);
    let firstDataSeconds: number | undefined;
    let firstError: string | undefined;
    try {
      await road.readers.get('connector', undefined, { signal: deadline });
      firstDataSeconds = (performance.now() - t0) / 1000;
    } catch (err) {
      firstError = deadline.aborted ? `no data within ${opts.maxSeconds} s` : (err as Error).message;
    }
    const fullScanRequests = connectorRequests();
    const fullScanBytes = connectorBytes();
    progress(`pace: first data ${firstDataSeconds === undefined ? firstError : `${firstDataSeconds.toFixed(1)} s`}, ${fullScanRequests} requests, ${fullScanBytes} bytes`);
    // Without pace from here: the bytes do not depend on it.
    sim.setConnectorPace(undefined);
    if (firstDataSeconds === undefined) await road.readers.get('connector');
    sim.clearRequests();
    sim.scenario.advance(300);
    await road.readers.get('connector');
    const incrementalRequests = connectorRequests();
    const incrementalBytes = connectorBytes();
    const perDay = 86_400 / stack.intervals.connectors;
    const bytesPerDay = fullScanBytes + incrementalBytes * (perDay - 1);
    return { rows, msPerRow: opts.msPerRow, baseMs: opts.baseMs, firstDataSeconds, firstError, fullScanRequests, fullScanBytes, incrementalRequests, incrementalBytes, bytesPerDay };
  } finally {
    await road.close();
    await sim.close();
  }
}

export function paceLines(r: Awaited<ReturnType<typeof benchPace>>): string[] {
  const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
  return [
    `connector history at the real pace (${r.rows} runs, ${r.msPerRow} ms a row + ${r.baseMs} ms a page, built-in defaults):`,
    `  first connector data: ${r.firstDataSeconds === undefined ? `never (${r.firstError})` : `${r.firstDataSeconds.toFixed(0)} s`}; ${r.fullScanRequests} page requests, ${mb(r.fullScanBytes)}`,
    `  incremental poll 5 min later (the runs of those 5 min new): ${r.incrementalRequests} request(s), ${(r.incrementalBytes / 1024).toFixed(1)} KiB`,
    `  bytes a day at the defaults (one full scan, an incremental poll every 5 min): ${mb(r.bytesPerDay)}`,
  ];
}
