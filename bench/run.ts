/**
 * `npm run bench`: measures the exporter at three data sizes against the simulator (loopback only)
 * and prints the figures. `npm run bench -- --write` also rewrites docs/performance.md.
 * Every loop is bounded by count and by time; see --help for the knobs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { measureBudget, measureRequestBudget } from './budget-run.js';
import { requestBudgetTables } from './budget.js';
import { BACKFILL_DAYS, BACKFILL_END, BACKFILL_START, backfillSection, backfillTable, benchBackfill } from './backfill-run.js';
import { markdownTable, textTable } from './format.js';
import { HISTORY_END, HISTORY_START, historySection, renderPerformanceDoc } from './performance-doc.js';
import type { BenchResult, BenchSettings, Machine, SizeResult } from './results.js';
import { benchHistory, historyLines } from './history-run.js';
import { benchSize, benchSwapOnly, medianSwap } from './size-run.js';
import { SIZES, sizeByName, type BenchSize } from './sizes.js';
import { allTables } from './tables.js';
import { benchPace, paceLines, type PaceOptions } from './pace-run.js';
import { benchFleet, FLEET_DEFAULTS, fleetLines, type FleetOptions } from './fleet-run.js';
import { benchRestarts, restartLines, restartSection, RESTART_END, RESTART_START, type RestartFigures } from './restart-run.js';
import { benchState } from './state-run.js';
import { measureQueries, QUERIES_DEFAULTS, QUERIES_END, QUERIES_START, queriesSection, queriesTable } from './queries-run.js';

const USAGE = `Usage: npm run bench -- [options]

  --write             also rewrite docs/performance.md with the figures
  --sizes LIST        comma-separated sizes to run (default small,medium,large)
  --seconds N         time limit of each /metrics load cell against the bare server (default 15)
  --rounds N          rounds of exporter and bare server cells per encoding (default 2)
  --clients N         keep-alive connections of the /metrics load (default 10)
  --max-requests N    request limit of each /metrics load cell (default 200000)
  --polling-seconds N how long one client scrapes while polls run (default 20)
  --polling-sizes L   sizes at which it does (default medium)
  --formats LIST      the formats beyond the text format whose /metrics is also compared with the
                      bare server (default openmetrics; none: the text format only)
  --json FILE         also save the raw figures as JSON
  --doc-from FILE     measure nothing: rewrite docs/performance.md from figures saved with --json
  --history-only      run only the connector-history cell (scrape p99, peak RSS, bytes per poll); with
                      --write, its section of docs/performance.md is replaced in place
  --no-history        skip the connector-history cell
  --history-seconds N how long the connector-history cell scrapes (default 90)
  --budget-hours N    simulated hours of the request-budget cell at 200 Actions (default 3)
  --no-request-budget skip the request-budget cell
  --only fleet        run only the fleet cell: 1, 50 and 200 small stacks, one target each
                      (ready time, RSS and CPU per stack, one stack's scrape against a bare server)
  --fleet-counts L    fleet sizes of the fleet cell (default 1,50,200)
  --fleet-seconds N   CPU window of each fleet size (default 20)
  --no-fleet          skip the fleet cell
  --only backfill     run only the backfill cell (30 days of the medium size through
                      cmdb-exporter backfill by both routes: blocks with promtool, and remote
                      write into VictoriaMetrics); with --write, its section of
                      docs/performance.md is replaced in place
  --backfill-days N   days of the backfill cell (default 30)
  --backfill-step D   --step of the backfill cell (default: the command's default steps)
  --no-backfill       skip the backfill cell
  --only queries      run only the saved-queries cell (a simulated day of the worked example queries
                      while the mergers rebuild every 4 h and every 10 min: requests per query per
                      rebuild from the simulator's log); with --write, its section of
                      docs/performance.md is replaced in place
  --no-queries        skip the saved-queries cell
  --only swap         run only the swap cell at each size: a first poll, then --repeats changes of
                      every series of the largest endpoint swapped in; prints each one's figures
  --repeats N         swaps of --only swap (default 3)
  --only pace         run only the connector history at the real service's pace (~2.3 s per 100
                      rows): time to the first connector data, bytes a day at the defaults
  --pace-ms-per-row N ms a row of the pace cell (default 23); --pace-base-ms N ms a page (default 600)
  --no-pace           skip the pace cell (it takes a few minutes: that is the point of it)
  --only restart      run only the restart cell: the daemon stopped and started again at the pace
                      cell's size, without and with --storage.path (SIGTERM, SIGKILL), and the
                      state file's size and write cost at the large size; with --write, its section
                      of docs/performance.md is replaced in place
  --restart-ms-per-row N  ms a row of the restart cell (default 10: a 2,000-row page ~20 s);
                      --restart-base-ms N ms a page (default 600)
  --no-restart        skip the restart cell (it takes about 8 minutes)
  --node-option OPT   run the exporter's process with this Node option (repeatable), e.g.
                      --trace-gc (its lines go to stderr, with the measured changes marked)
  -h, --help          show this help`;

/** The doc with the section between `startMarker` and `endMarker` replaced (or added before "What the figures mean"). */
export function spliceSection(doc: string, section: string, startMarker: string, endMarker: string): string {
  const start = doc.indexOf(startMarker);
  const end = doc.indexOf(endMarker);
  if (start >= 0 && end > start) return `${doc.slice(0, start)}${section.trimEnd()}${doc.slice(end + endMarker.length)}`;
  const at = doc.indexOf('## What the figures mean');
  return at < 0 ? `${doc.trimEnd()}\n\n${section}` : `${doc.slice(0, at)}${section}\n${doc.slice(at)}`;
}

/** The doc with its backfill section replaced (or added before "What the figures mean"). */
export function spliceBackfill(doc: string, section: string): string {
  return spliceSection(doc, section, BACKFILL_START, BACKFILL_END);
}

const DOC = new URL('../docs/performance.md', import.meta.url);

/** A cell run alone: its figures to --json, and with --write its section spliced into docs/performance.md. */
function saveCell(options: Options, figures: Record<string, unknown>, section: () => string, marks: readonly [string, string], what: string): void {
  if (options.json) writeFileSync(options.json, `${JSON.stringify({ machine: machine(), ...figures }, null, 2)}\n`);
  if (!options.write) return;
  writeFileSync(DOC, spliceSection(readFileSync(DOC, 'utf8'), section(), marks[0], marks[1]));
  console.log(`wrote the ${what} section of docs/performance.md`);
}

interface Options {
  readonly write: boolean;
  readonly sizes: readonly BenchSize[];
  readonly settings: BenchSettings;
  readonly json?: string;
  readonly history: 'skip' | 'only' | 'also';
  readonly historySeconds: number;
  /** Simulated hours of the request-budget cell; 0 skips it. */
  readonly budgetHours: number;
  /** Run only this cell. */
  readonly only?: 'swap' | 'pace' | 'fleet' | 'backfill' | 'restart' | 'queries';
  /** The restart cell's page pace; undefined skips it. */
  readonly restart?: { readonly msPerRow: number; readonly baseMs: number };
  readonly pace: PaceOptions;
  readonly noPace: boolean;
  readonly fleet?: FleetOptions;
  readonly backfill: { readonly run: boolean; readonly days: number; readonly step?: string };
  /** Run the saved-queries cell. */
  readonly queries: boolean;
  readonly repeats: number;
  /** Extra options of the exporter's Node process. */
  readonly exporterNodeArgs: readonly string[];
}

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got ${JSON.stringify(text)}`);
  return n;
}

function nonNegative(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number of at least 0, got ${JSON.stringify(text)}`);
  return n;
}

function formatsOf(list: string): Array<'openmetrics'> {
  if (list === 'none') return [];
  return list.split(',').map((f) => {
    const name = f.trim();
    if (name !== 'openmetrics') throw new Error(`--formats: unknown format ${JSON.stringify(name)} (formats: openmetrics, or none)`);
    return name;
  });
}

function parseOptions(argv: string[]): Options | 'help' | { docFrom: string } {
  const { values } = parseArgs({
    args: argv,
    options: {
      write: { type: 'boolean', default: false },
      sizes: { type: 'string' },
      seconds: { type: 'string' },
      'max-requests': { type: 'string' },
      rounds: { type: 'string' },
      clients: { type: 'string' },
      'polling-seconds': { type: 'string' },
      'polling-sizes': { type: 'string' },
      formats: { type: 'string' },
      json: { type: 'string' },
      'doc-from': { type: 'string' },
      'history-only': { type: 'boolean', default: false },
      'no-history': { type: 'boolean', default: false },
      'history-seconds': { type: 'string' },
      'budget-hours': { type: 'string' },
      'no-request-budget': { type: 'boolean', default: false },
      only: { type: 'string' },
      'fleet-counts': { type: 'string' },
      'fleet-seconds': { type: 'string' },
      'no-fleet': { type: 'boolean', default: false },
      'backfill-days': { type: 'string' },
      'backfill-step': { type: 'string' },
      'no-backfill': { type: 'boolean', default: false },
      'no-queries': { type: 'boolean', default: false },
      repeats: { type: 'string' },
      'pace-ms-per-row': { type: 'string' },
      'pace-base-ms': { type: 'string' },
      'no-pace': { type: 'boolean', default: false },
      'restart-ms-per-row': { type: 'string' },
      'restart-base-ms': { type: 'string' },
      'no-restart': { type: 'boolean', default: false },
      'node-option': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  if (values['doc-from']) return { docFrom: values['doc-from'] };
  const sizes = values.sizes
    ? values.sizes.split(',').map((name) => {
        const size = sizeByName(name.trim());
        if (!size) throw new Error(`--sizes: unknown size ${JSON.stringify(name)} (sizes: ${SIZES.map((s) => s.name).join(', ')})`);
        return size;
      })
    : SIZES;
  const cells = ['swap', 'pace', 'fleet', 'backfill', 'restart', 'queries'];
  if (values.only !== undefined && !cells.includes(values.only)) {
    throw new Error(`--only: unknown cell ${JSON.stringify(values.only)} (cells: ${cells.join(', ')})`);
  }
  const fleetCounts = (values['fleet-counts'] ?? '1,50,200').split(',').map((n) => Math.floor(positive('fleet-counts', n.trim(), 1)));
  return {
    only: values.only as Options['only'],
    noPace: values['no-pace'],
    ...(values['no-restart'] && values.only !== 'restart'
      ? {}
      : { restart: { msPerRow: nonNegative('restart-ms-per-row', values['restart-ms-per-row'], 10), baseMs: nonNegative('restart-base-ms', values['restart-base-ms'], 600) } }),
    pace: { msPerRow: nonNegative('pace-ms-per-row', values['pace-ms-per-row'], 23), baseMs: nonNegative('pace-base-ms', values['pace-base-ms'], 600), maxSeconds: 900 },
    fleet: values['no-fleet'] ? undefined : { ...FLEET_DEFAULTS, counts: fleetCounts, cpuSeconds: positive('fleet-seconds', values['fleet-seconds'], FLEET_DEFAULTS.cpuSeconds) },
    backfill: {
      run: !values['no-backfill'],
      days: Math.floor(positive('backfill-days', values['backfill-days'], BACKFILL_DAYS)),
      ...(values['backfill-step'] ? { step: values['backfill-step'] } : {}),
    },
    queries: !values['no-queries'],
    repeats: Math.floor(positive('repeats', values.repeats, 3)),
    exporterNodeArgs: values['node-option'] ?? [],
    write: values.write,
    sizes,
    json: values.json,
    history: values['no-history'] ? 'skip' : values['history-only'] ? 'only' : 'also',
    historySeconds: positive('history-seconds', values['history-seconds'], 90),
    budgetHours: values['no-request-budget'] ? 0 : positive('budget-hours', values['budget-hours'], 3),
    settings: {
      compare: {
        clients: Math.floor(positive('clients', values.clients, 10)),
        seconds: positive('seconds', values.seconds, 15),
        rounds: Math.floor(positive('rounds', values.rounds, 2)),
        maxRequests: Math.floor(positive('max-requests', values['max-requests'], 200_000)),
      },
      formats: formatsOf(values.formats ?? 'openmetrics'),
      pollingSeconds: positive('polling-seconds', values['polling-seconds'], 20),
      pollingSizes: (values['polling-sizes'] ?? 'medium').split(',').map((name) => {
        const size = sizeByName(name.trim());
        if (!size) throw new Error(`--polling-sizes: unknown size ${JSON.stringify(name)}`);
        return size.name;
      }),
    },
  };
}

function machine(): Machine {
  const cores = cpus();
  return {
    cpus: cores.length,
    cpuModel: cores[0]?.model.trim() ?? 'unknown',
    memoryBytes: totalmem(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString().slice(0, 10),
  };
}

const progress = (message: string) => console.error(`bench: ${message}`);

/** The restart cell: the restarts at the pace cell's size, and the state file at the large size. */
async function restartCell(pace: { readonly msPerRow: number; readonly baseMs: number }): Promise<RestartFigures> {
  const runs = await benchRestarts({ ...pace, maxSeconds: 900 }, progress);
  const large = sizeByName('large');
  const state = large ? [await benchState(large, progress)] : [];
  return { ...pace, runs, state };
}

function stateTable(f: RestartFigures) {
  return { title: 'state file', head: ['size', 'series', 'bytes', 'write ms', 'CPU ms', 'longest block ms', 'start() ms', 'served ms'], numericFrom: 1, rows: f.state.map((x) => [x.size, String(x.series), String(x.fileBytes), x.writeMs.toFixed(0), x.writeCpuMs.toFixed(0), x.writeMaxBlockMs.toFixed(1), x.startMs.toFixed(0), x.restoredMs.toFixed(0)]) };
}

/** `--only swap`: each size's first poll and swaps, one line each (not written to the doc). */
async function swapOnly(options: Options): Promise<void> {
  const results = [];
  for (const size of options.sizes) results.push(await benchSwapOnly(size, options.repeats, options.exporterNodeArgs, progress));
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  for (const r of results) {
    console.log(`${r.size}: first poll ${ms(r.first.wallMs)}, longest block ${ms(r.first.maxLoopDelayMs)}, ${r.first.cmdbSeries} series`);
    for (const [i, s] of r.swaps.entries()) {
      const d = s.data;
      console.log(`${r.size}: swap ${i + 1}: ${d.series} series changed, longest block ${ms(d.maxLoopDelayMs)}, until gzip ready ${ms(d.wallMs)}, CPU ${ms(d.cpuMs)}; status-only: longest block ${ms(s.status.maxLoopDelayMs)}, ${ms(s.status.wallMs)}; idle 2 s before: longest block ${ms(s.idleMaxLoopDelayMs ?? NaN)}`);
    }
    console.log(`${r.size}: median longest block of ${r.swaps.length} swaps: ${ms(medianSwap(r.swaps).data.maxLoopDelayMs)}; peak RSS (VmHWM) ${r.peakRssBytes === null ? '–' : `${(r.peakRssBytes / 2 ** 20).toFixed(0)} MiB`}`);
  }
  if (options.json) writeFileSync(options.json, `${JSON.stringify({ machine: machine(), swapOnly: results }, null, 2)}\n`);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options === 'help') {
    console.log(USAGE);
    return;
  }
  if ('docFrom' in options) {
    writeFileSync(DOC, renderPerformanceDoc(JSON.parse(readFileSync(options.docFrom, 'utf8')) as BenchResult));
    console.log(`wrote docs/performance.md from ${options.docFrom}`);
    return;
  }
  if (options.only === 'swap') {
    await swapOnly(options);
    return;
  }
  if (options.only === 'pace') {
    const pace = await benchPace(options.pace, progress);
    for (const line of paceLines(pace)) console.log(line);
    if (options.json) writeFileSync(options.json, `${JSON.stringify({ machine: machine(), pace }, null, 2)}\n`);
    return;
  }
  if (options.only === 'fleet') {
    const fleet = await benchFleet(options.fleet ?? FLEET_DEFAULTS, progress);
    for (const line of fleetLines(fleet)) console.log(line);
    if (options.json) writeFileSync(options.json, `${JSON.stringify({ machine: machine(), fleet }, null, 2)}\n`);
    return;
  }
  if (options.only === 'restart') {
    const figures = await restartCell(options.restart ?? { msPerRow: 10, baseMs: 600 });
    for (const line of restartLines(figures.runs)) console.log(line);
    console.log(`${textTable(stateTable(figures))}\n`);
    saveCell(options, { restart: figures }, () => restartSection(figures, markdownTable), [RESTART_START, RESTART_END], 'restart');
    return;
  }
  if (options.only === 'backfill') {
    const figures = await benchBackfill(options.backfill, progress);
    console.log(`${textTable(backfillTable(figures))}\n`);
    saveCell(options, { backfill: figures }, () => backfillSection(figures, markdownTable), [BACKFILL_START, BACKFILL_END], 'backfill');
    return;
  }
  if (options.only === 'queries') {
    const figures = await measureQueries(QUERIES_DEFAULTS, progress);
    console.log(`${textTable(queriesTable(figures))}\n`);
    saveCell(options, { queries: figures }, () => queriesSection(figures, markdownTable), [QUERIES_START, QUERIES_END], 'saved-queries');
    return;
  }
  const t0 = performance.now();
  const history = options.history === 'skip' ? undefined : await benchHistory(options.historySeconds, progress, options.exporterNodeArgs);
  if (history) for (const line of historyLines(history)) console.log(line);
  if (options.history === 'only' && history) {
    saveCell(options, { history }, () => historySection(history), [HISTORY_START, HISTORY_END], 'connector history');
    return;
  }
  const sizes: SizeResult[] = [];
  for (const size of options.sizes) sizes.push(await benchSize(size, options.settings, progress));
  const budget = await measureBudget(options.sizes.find((s) => s.name === 'small'), progress);
  const pace = options.noPace ? undefined : await benchPace(options.pace, progress);
  const medium = sizeByName('medium');
  const requestBudget =
    options.budgetHours > 0 && medium ? await measureRequestBudget({ knobs: medium.knobs, hours: options.budgetHours, maxWallSeconds: 1800 }, progress) : undefined;
  const backfill = options.backfill.run ? await benchBackfill(options.backfill, progress) : undefined;
  const restart = options.restart ? await restartCell(options.restart) : undefined;
  const queries = options.queries ? await measureQueries(QUERIES_DEFAULTS, progress) : undefined;
  const result: BenchResult = { machine: machine(), settings: options.settings, sizes, budget, history, pace, requestBudget, backfill, restart, queries, totalSeconds: (performance.now() - t0) / 1000 };

  const m = result.machine;
  console.log(`cmdb-exporter benchmark — ${m.cpus} × ${m.cpuModel}, ${(m.memoryBytes / 2 ** 30).toFixed(1)} GiB, Node ${m.node}, ${m.date}\n`);
  for (const table of allTables(result)) console.log(`${textTable(table)}\n`);
  if (budget.measured) {
    const b = budget.measured;
    console.log(`Measured at ${budget.ratePerMinute}/min, ${b.size} size: ${b.requests} requests took ${b.wallSeconds.toFixed(1)} s (model: ${b.modelSeconds.toFixed(1)} s)\n`);
  }
  if (requestBudget) for (const table of requestBudgetTables(requestBudget)) console.log(`${textTable(table)}\n`);
  if (pace) for (const line of paceLines(pace)) console.log(line);
  if (backfill) console.log(`${textTable(backfillTable(backfill))}\n`);
  if (restart) for (const line of restartLines(restart.runs)) console.log(line);
  if (queries) console.log(`${textTable(queriesTable(queries))}\n`);
  for (const s of sizes) for (const w of s.warnings) console.log(`exporter log (${s.size}): ${w}`);
  const fleet = options.fleet ? await benchFleet(options.fleet, progress) : undefined;
  if (fleet) console.log(`${fleetLines(fleet).join('\n')}\n`);
  console.log(`total ${result.totalSeconds.toFixed(0)} s`);

  if (options.json) writeFileSync(options.json, `${JSON.stringify({ ...result, fleet }, null, 2)}\n`);
  if (options.write) {
    writeFileSync(DOC, renderPerformanceDoc(result));
    console.log('wrote docs/performance.md');
  }
}

main().catch((err: unknown) => {
  console.error('bench failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
