/**
 * `npm run bench:compression`: what gzip saves on the connector history, at the defaults
 * (paging.connectorPageSize 2000, intervals.connectors 5 min, connectorFullScanInterval 24 h).
 * The simulator (its own process, the connector-history cell's ~100 MB history) answers once plain
 * and once gzip-compressed (it compresses only when asked, so "plain" is also what the exporter
 * before compression read from any service). Per mode: the wire bytes of one default-size page,
 * the time to fetch and decode it over loopback (median of --repeats), and the wire bytes of a
 * full scan and of an incremental poll as the exporter's client reads them; a day is one full
 * scan and the incremental polls of the other intervals. Every loop is bounded by count.
 * With --remote-write: the share of snappy compression in a remote-write backfill (snappy-run.ts).
 * Prints a Markdown table and saves the figures as JSON (bench/results/, or --json FILE).
 */
import { parseArgs } from 'node:util';
import { Agent } from 'undici';
import { attempt } from '../src/cmdb/attempt.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { Compression } from '../src/simulator/api.js';
import { startChild } from './children.js';
import { saveFigures } from './format.js';
import { HISTORY_KNOBS } from './history-run.js';
import { requestLog, simulatorToken, type SimulatorReady } from './simulator-process.js';
import { benchSnappy, snappyLines } from './snappy-run.js';
import { quietRoad, simulatorStack } from './stack.js';

const USAGE = `Usage: npm run bench:compression -- [options]

  --repeats N        page fetches timed per mode (default 5)
  --mbit N           link speed for the computed WAN transfer time (default 50)
  --remote-write     instead: compression's share of a remote-write backfill (30 days of the
                     medium size, --step 1h), native snappy against pure-JS snappyjs
  --json FILE        save the figures to FILE (default: bench/results/compression-<time>.json)
  -h, --help         show this help`;

type CompressionFigures = Awaited<ReturnType<typeof measureMode>>;

const DAY = 86_400;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const connectorLog = async (sim: SimulatorReady) => (await requestLog(sim.url)).filter((r) => r.endpoint === 'connector');

/**
 * One mode: one default-size page (wire and decoded bytes; fetched and decoded over loopback, median
 * and range in ms), a full scan and an incremental poll (pages, wire bytes), and a day: one full scan
 * plus the incremental polls of the rest of the day.
 */
async function measureMode(mode: Compression, repeats: number, progress: (m: string) => void) {
  const child = await startChild('simulator-process.ts', [JSON.stringify(HISTORY_KNOBS), JSON.stringify({ compression: mode })]);
  const dispatcher = new Agent({ connections: 1 });
  try {
    const sim = child.ready as SimulatorReady;
    const size = BUILTIN_SETTINGS.paging.connectorPageSize;
    const bearer = await simulatorToken(sim);
    progress(`${mode}: ${sim.connectorRuns} runs; page 0 of ${size} rows, ${repeats} times`);
    const times: number[] = [];
    let pageWire = 0;
    let pageDecoded = 0;
    for (let i = 0; i < repeats; i++) {
      const t0 = performance.now();
      const reply = await attempt(
        {
          method: 'GET',
          origin: new URL(sim.url).origin,
          path: `/CMDB/v2/system/metrics/connector?page=0&size=${size}`,
          headers: { Authorization: `Bearer ${bearer}`, Accept: 'application/json' },
          request: 'GET connector',
        },
        { dispatcher, timeoutSeconds: 120, connectTimeoutSeconds: 10, maxResponseBytes: BUILTIN_SETTINGS.maxResponseBytes },
      );
      times.push(performance.now() - t0);
      pageWire = reply.wireBytes ?? reply.body.length;
      pageDecoded = reply.body.length;
    }
    progress(`${mode}: a full scan and an incremental poll through the exporter's client`);
    const stack = simulatorStack(sim, { rateLimitPerMinute: 6000 });
    const road = quietRoad(stack);
    try {
      const before = (await connectorLog(sim)).length;
      await road.readers.get('connector');
      const afterFull = await connectorLog(sim);
      await road.readers.get('connector');
      const afterIncremental = await connectorLog(sim);
      const sum = (rs: readonly { bytes: number }[]) => rs.reduce((n, r) => n + r.bytes, 0);
      const full = afterFull.slice(before);
      const incremental = afterIncremental.slice(afterFull.length);
      const intervals = DAY / stack.intervals.connectors;
      const perFull = Math.max(1, DAY / stack.connectorFullScanInterval);
      return {
        mode,
        runs: sim.connectorRuns,
        pageRows: size,
        pageWire,
        pageDecoded,
        pageMs: { median: median(times), min: Math.min(...times), max: Math.max(...times) },
        fullScan: { pages: full.length, wire: sum(full) },
        incremental: { pages: incremental.length, wire: sum(incremental) },
        perDay: perFull * sum(full) + (intervals - perFull) * sum(incremental),
      };
    } finally {
      await road.close();
    }
  } finally {
    await dispatcher.close();
    await child.stop();
  }
}

const mib = (b: number) => `${(b / 1024 ** 2).toFixed(2)} MiB`;

function compressionLines(plain: CompressionFigures, gzip: CompressionFigures, mbit: number): string[] {
  const wan = (b: number) => `${((b * 8) / (mbit * 1e6)).toFixed(2)} s`;
  const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}×`;
  const row = (what: string, p: string, g: string, r: string) => `| ${what} | ${p} | ${g} | ${r} |`;
  return [
    `Connector history of ${plain.runs} runs; defaults: ${plain.pageRows}-row pages, a poll every ${BUILTIN_SETTINGS.intervals.connectors} s, a full scan every ${BUILTIN_SETTINGS.connectorFullScanInterval / 3600} h.`,
    '',
    '| | plain (before) | gzip (after) | plain / gzip |',
    '|---|---:|---:|---:|',
    row(`one ${plain.pageRows}-row page on the wire`, mib(plain.pageWire), mib(gzip.pageWire), ratio(plain.pageWire, gzip.pageWire)),
    row('that page, fetched and decoded over loopback (median)', `${plain.pageMs.median.toFixed(0)} ms`, `${gzip.pageMs.median.toFixed(0)} ms`, ratio(plain.pageMs.median, gzip.pageMs.median)),
    row(`that page at ${mbit} Mbit/s (computed: wire bytes / link speed)`, wan(plain.pageWire), wan(gzip.pageWire), ratio(plain.pageWire, gzip.pageWire)),
    row(`a full scan (${plain.fullScan.pages} pages)`, mib(plain.fullScan.wire), mib(gzip.fullScan.wire), ratio(plain.fullScan.wire, gzip.fullScan.wire)),
    row(`an incremental poll (${plain.incremental.pages} page${plain.incremental.pages === 1 ? '' : 's'})`, mib(plain.incremental.wire), mib(gzip.incremental.wire), ratio(plain.incremental.wire, gzip.incremental.wire)),
    row('a day (1 full scan + the incremental polls)', mib(plain.perDay), mib(gzip.perDay), ratio(plain.perDay, gzip.perDay)),
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { repeats: { type: 'string' }, mbit: { type: 'string' }, 'remote-write': { type: 'boolean' }, json: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(USAGE);
  const progress = (m: string) => console.error(`compression: ${m}`);
  if (values['remote-write']) {
    const figures = await benchSnappy({ rounds: Number(values.repeats ?? 5) || 5 }, progress);
    console.log(snappyLines(figures).join('\n'));
    return saveFigures('compression', { remoteWrite: figures }, values.json);
  }
  const repeats = Math.min(50, Math.max(1, Number(values.repeats ?? 5) || 5));
  const mbit = Math.max(1, Number(values.mbit ?? 50) || 50);
  const plain = await measureMode('off', repeats, progress);
  const gzip = await measureMode('gzip', repeats, progress);
  console.log(compressionLines(plain, gzip, mbit).join('\n'));
  saveFigures('compression', { mbit, plain, gzip }, values.json);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
