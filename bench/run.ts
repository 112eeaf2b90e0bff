/**
 * `npm run bench`: measures the exporter at three data sizes against the simulator (loopback only),
 * then the other cells; prints the figures as Markdown tables and saves them as JSON (bench/results/,
 * or --json FILE). docs/performance.md is written by hand from them. Every loop is bounded by count
 * and by time; see --help for the knobs.
 */
import { parseArgs } from 'node:util';
import { BACKFILL_DAYS, backfillTable, benchBackfill } from './backfill-run.js';
import { measureRequestBudget, requestBudgetTables } from './budget.js';
import { benchFleet, FLEET_DEFAULTS, fleetLines } from './fleet-run.js';
import { machineLine, printTable, saveFigures, seconds } from './format.js';
import { benchHistory, historyLines } from './history-run.js';
import { benchPace, paceLines } from './pace-run.js';
import { measureQueries, QUERIES_DEFAULTS, queriesTable } from './queries-run.js';
import { benchRestarts, restartTables } from './restart-run.js';
import type { BenchSettings, SizeResult } from './results.js';
import { benchSize, benchSwapOnly, medianSwap } from './size-run.js';
import { SIZES, sizeByName, type BenchSize } from './sizes.js';
import { allTables, derivedLines, goalLines } from './tables.js';

const USAGE = `Usage: npm run bench -- [options]

The size cells (small, medium, large: polls, /metrics against a bare server, memory, swaps, scrapes
while polling), then the cells below; docs/performance.md says what each measures.

  --sizes LIST          sizes to run (default small,medium,large)
  --seconds N           time limit of each /metrics load cell against the bare server (default 15)
  --rounds N            rounds of exporter and bare server cells per encoding (default 2)
  --clients N           keep-alive connections of the /metrics load (default 10)
  --max-requests N      request limit of each /metrics load cell (default 200000)
  --polling-seconds N   how long one client scrapes while polls run (default 20)
  --polling-sizes LIST  sizes at which it does (default medium)
  --formats LIST        formats beyond the text format also compared with the bare server
                        (default openmetrics; none: the text format only)
  --only CELL           run only this cell: swap (the swap cell at each size, --repeats times),
                        history, pace, request-budget, backfill, restart, queries or fleet
  --no-CELL             skip this cell (--no-history, --no-pace, --no-request-budget, --no-backfill,
                        --no-restart, --no-queries, --no-fleet)
  --repeats N           swaps of --only swap (default 3)
  --history-seconds N   how long the connector-history cell scrapes (default 90)
  --pace-ms-per-row N   ms a row of the pace cell (default 23); --pace-base-ms N: a page (default 600)
  --budget-hours N      simulated hours of the request-budget cell at 200 Actions (default 3)
  --backfill-days N     days of the backfill cell (default 30)
  --backfill-step D     --step of the backfill cell (default: the command's default steps)
  --restart-ms-per-row N  ms a row of the restart cell (default 10: a 2,000-row page ~20 s);
                        --restart-base-ms N: a page (default 600)
  --fleet-counts LIST   fleet sizes of the fleet cell (default 1,50,200)
  --fleet-seconds N     CPU window of each fleet size (default 20)
  --node-option OPT     run the exporter's process with this Node option (repeatable), e.g.
                        --trace-gc (its lines go to stderr, with the measured changes marked)
  --json FILE           save the figures to FILE (default: bench/results/<cell>-<time>.json)
  -h, --help            show this help`;

const CELL_NAMES = ['history', 'pace', 'request-budget', 'backfill', 'restart', 'queries', 'fleet'] as const;
type CellName = (typeof CELL_NAMES)[number];

const SKIP_FLAGS = Object.fromEntries(CELL_NAMES.map((c) => [`no-${c}`, { type: 'boolean' as const, default: false }]));
const NUMBERS = ['seconds', 'rounds', 'clients', 'max-requests', 'polling-seconds', 'repeats', 'history-seconds', 'pace-ms-per-row', 'pace-base-ms', 'budget-hours', 'backfill-days', 'restart-ms-per-row', 'restart-base-ms', 'fleet-seconds'] as const;

function parseOptions(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...Object.fromEntries(NUMBERS.map((n) => [n, { type: 'string' as const }])),
      ...SKIP_FLAGS,
      sizes: { type: 'string' },
      'polling-sizes': { type: 'string' },
      formats: { type: 'string' },
      only: { type: 'string' },
      'backfill-step': { type: 'string' },
      'fleet-counts': { type: 'string' },
      'node-option': { type: 'string', multiple: true },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  // The number options and the --no-CELL flags are declared from lists, so read them by name.
  const byName = values as Readonly<Record<string, string | boolean | string[] | undefined>>;
  /** A number option: at least 0 (pace: 0 ms is none), or above 0 and whole where a count. */
  const number = (name: (typeof NUMBERS)[number], fallback: number, kind: 'count' | 'positive' | 'any' = 'positive'): number => {
    const text = byName[name] as string | undefined;
    const n = text === undefined ? fallback : Number(text);
    const ok = Number.isFinite(n) && (kind === 'any' ? n >= 0 : n > 0) && (kind !== 'count' || Number.isInteger(n));
    if (!ok) throw new Error(`--${name} must be ${kind === 'any' ? 'a number of at least 0' : kind === 'count' ? 'a whole number above 0' : 'a number above 0'}, got ${JSON.stringify(text)}`);
    return n;
  };
  const sizes = (flag: string, list: string): BenchSize[] =>
    list.split(',').map((name) => {
      const size = sizeByName(name.trim());
      if (!size) throw new Error(`--${flag}: unknown size ${JSON.stringify(name)} (sizes: ${SIZES.map((s) => s.name).join(', ')})`);
      return size;
    });
  const counts = (values['fleet-counts'] ?? '1,50,200').split(',').map(Number);
  if (!counts.every((n) => Number.isInteger(n) && n > 0)) throw new Error(`--fleet-counts must be whole numbers above 0, got ${JSON.stringify(values['fleet-counts'])}`);
  const only = values.only;
  if (only !== undefined && only !== 'swap' && !(CELL_NAMES as readonly string[]).includes(only)) {
    throw new Error(`--only: unknown cell ${JSON.stringify(only)} (cells: swap, ${CELL_NAMES.join(', ')})`);
  }
  const formats = values.formats ?? 'openmetrics';
  if (formats !== 'openmetrics' && formats !== 'none') throw new Error(`--formats: unknown format ${JSON.stringify(formats)} (formats: openmetrics, or none)`);
  const settings: BenchSettings = {
    compare: { clients: number('clients', 10, 'count'), seconds: number('seconds', 15), rounds: number('rounds', 2, 'count'), maxRequests: number('max-requests', 200_000, 'count') },
    formats: formats === 'none' ? [] : ['openmetrics'],
    pollingSeconds: number('polling-seconds', 20),
    pollingSizes: sizes('polling-sizes', values['polling-sizes'] ?? 'medium').map((s) => s.name),
  };
  return {
    help: values.help,
    only: only as CellName | 'swap' | undefined,
    skip: new Set(CELL_NAMES.filter((c) => byName[`no-${c}`] === true)),
    json: values.json,
    sizes: values.sizes ? sizes('sizes', values.sizes) : SIZES,
    settings,
    repeats: number('repeats', 3, 'count'),
    exporterNodeArgs: values['node-option'] ?? [],
    historySeconds: number('history-seconds', 90),
    pace: { msPerRow: number('pace-ms-per-row', 23, 'any'), baseMs: number('pace-base-ms', 600, 'any'), maxSeconds: 900 },
    budgetHours: number('budget-hours', 3),
    backfill: { days: number('backfill-days', BACKFILL_DAYS, 'count'), step: values['backfill-step'] },
    restart: { msPerRow: number('restart-ms-per-row', 10, 'any'), baseMs: number('restart-base-ms', 600, 'any') },
    fleet: { ...FLEET_DEFAULTS, counts, cpuSeconds: number('fleet-seconds', FLEET_DEFAULTS.cpuSeconds) },
  };
}

type Options = ReturnType<typeof parseOptions>;

const progress = (message: string) => console.error(`bench: ${message}`);
const lines = (xs: readonly string[]) => console.log(`${xs.join('\n')}\n`);

/** A cell beside the sizes: how it runs, and how its figures are printed. */
interface Cell {
  run(o: Options): Promise<unknown>;
  print(figures: unknown): void;
}
const cell = <T>(run: (o: Options) => Promise<T>, print: (figures: T) => void): Cell => ({ run, print: (f) => print(f as T) });

const CELLS: Record<CellName, Cell> = {
  history: cell((o) => benchHistory(o.historySeconds, progress, o.exporterNodeArgs), (h) => lines(historyLines(h))),
  pace: cell((o) => benchPace(o.pace, progress), (p) => lines(paceLines(p))),
  'request-budget': cell(
    (o) => measureRequestBudget({ knobs: sizeByName('medium')?.knobs ?? {}, hours: o.budgetHours, maxWallSeconds: 1800 }, progress),
    (f) => requestBudgetTables(f).forEach(printTable),
  ),
  backfill: cell((o) => benchBackfill(o.backfill, progress), (f) => printTable(backfillTable(f))),
  restart: cell((o) => benchRestarts(o.restart, progress), (f) => restartTables(f).forEach(printTable)),
  queries: cell(() => measureQueries(QUERIES_DEFAULTS, progress), (f) => printTable(queriesTable(f))),
  fleet: cell((o) => benchFleet(o.fleet, progress), (f) => lines(fleetLines(f))),
};

/** `--only swap`: each size's first poll and swaps, one line each. */
async function swapOnly(options: Options): Promise<void> {
  const results = [];
  for (const size of options.sizes) results.push(await benchSwapOnly(size, options.repeats, options.exporterNodeArgs, progress));
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  for (const r of results) {
    console.log(`${r.size}: first poll ${ms(r.first.wallMs)}, longest block ${ms(r.first.maxLoopDelayMs)}, ${r.first.cmdbSeries} series`);
    for (const [i, s] of r.swaps.entries()) {
      const d = s.data;
      console.log(`${r.size}: swap ${i + 1}: ${d.series} series changed, longest block ${ms(d.maxLoopDelayMs)}, until gzip ready ${ms(d.wallMs)}, CPU ${ms(d.cpuMs)}; status-only: longest block ${ms(s.status.maxLoopDelayMs)}, ${ms(s.status.wallMs)}; idle 2 s before: longest block ${ms(s.idleMaxLoopDelayMs)}`);
    }
    console.log(`${r.size}: median longest block of ${r.swaps.length} swaps: ${ms(medianSwap(r.swaps).data.maxLoopDelayMs)}; peak RSS (VmHWM) ${r.peakRssBytes === null ? '–' : `${(r.peakRssBytes / 2 ** 20).toFixed(0)} MiB`}`);
  }
  saveFigures('swap', { swapOnly: results }, options.json);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (options.help) return console.log(USAGE);
  if (options.only === 'swap') return swapOnly(options);
  if (options.only) {
    const figures = await CELLS[options.only].run(options);
    CELLS[options.only].print(figures);
    saveFigures(options.only, { [options.only]: figures }, options.json);
    return;
  }
  const t0 = performance.now();
  const figures: Partial<Record<CellName, unknown>> = {};
  // The connector-history cell runs first, then the sizes, then the other cells.
  if (!options.skip.has('history')) figures.history = await CELLS.history.run(options);
  const sizes: SizeResult[] = [];
  for (const size of options.sizes) sizes.push(await benchSize(size, options.settings, progress));
  for (const name of CELL_NAMES) if (name !== 'history' && !options.skip.has(name)) figures[name] = await CELLS[name].run(options);
  const totalSeconds = (performance.now() - t0) / 1000;

  const result = { settings: options.settings, sizes };
  console.log(`# cmdb-exporter benchmark\n\n${machineLine()}; the whole run took ${seconds(totalSeconds)}.\n`);
  allTables(result).forEach(printTable);
  console.log(`/metrics against its goals:\n\n${goalLines(result).join('\n')}\n`);
  console.log(`Derived figures:\n\n${derivedLines(result).join('\n')}\n`);
  for (const name of CELL_NAMES) if (figures[name] !== undefined) CELLS[name].print(figures[name]);
  for (const s of sizes) for (const w of s.warnings) console.log(`exporter log (${s.size}): ${w}`);
  saveFigures('bench', { ...result, ...figures, totalSeconds }, options.json);
}

main().catch((err: unknown) => {
  console.error('bench failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
