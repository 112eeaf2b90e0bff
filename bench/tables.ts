/** The benchmark's figures as tables: the same ones go to the console and to docs/performance.md. */
import { PROMETHEUS_REPLICAS, SCRAPE_INTERVAL_SECONDS, steadyState } from './analysis.js';
import { budgetSeconds, DEFAULT_RATE, hourlyVolume, REQUEST_BUDGET_HEADS } from './budget.js';
import { cellsOf, loadedRss, pooled, rssGrowth } from './compare-run.js';
import { bytes, count, ms, percent, seconds, type Table } from './format.js';
import type { BenchResult, SizeResult } from './results.js';
import { RAISED_RATE, SWAP_RUNS } from './sizes.js';
import { ENDPOINTS } from '../src/api/endpoints.js';

/** One column per endpoint, in the order of the endpoint list. */
const ENDPOINT_COLUMNS = ENDPOINTS;

/**
 * The column heads of every table, by id: docs/performance.md marks each table with its id, and
 * test/bench/performance-doc.test.ts fails when the doc's header rows and these disagree.
 */
export const TABLE_HEADS = {
  data: ['size', 'connectors', 'connector profiles', 'connector runs', 'Actions', 'Action jobs', 'tracked names'],
  polls: ['size', 'CMDB requests', 'wall time', 'budget wait', 'exporter CPU', 'longest event-loop block', 'CMDB series', '/metrics lines', '/metrics size', 'heap after GC', 'RSS', 'RSS at start'],
  requests: ['size', ...ENDPOINT_COLUMNS],
  'later-polls': ['size', 'requests at once', 'wall time', 'CPU', 'requests 1 h later', 'wall time', 'CPU'],
  compare: ['size', 'encoding', 'body', 'exporter req/s', 'p99', 'CPU/req', 'bare req/s', 'p99', 'CPU/req', 'ratio', 'ratio per round', 'requests'],
  memory: ['size', 'idle RSS', 'RSS, 10 scrapers', 'ratio', 'peak RSS (VmHWM)'],
  swap: ['size', 'series changed', 'longest block', 'until gzip ready', 'CPU', 'status-only: longest block', 'until gzip ready', 'CPU'],
  polling: ['size', 'seconds', 'polls', 'gzip scrapes', 'p50', 'p99', 'max', 'errors', 'peak RSS (VmHWM)'],
  'steady-state': ['size', 'polls', 'changes', 'scrapes', 'total', 'of one core'],
  budget: ['size', 'first-poll requests', 'first poll takes', 'docs/design.md inputs', 'requests/hour', 'of budget', 'hourly jobs refresh'],
  ...REQUEST_BUDGET_HEADS,
} as const satisfies Record<string, readonly string[]>;

/**
 * Tables that stand in for others: the modelled `budget` table is written only when the measured
 * request-budget cell did not run (`--no-request-budget`).
 */
export const STANDS_IN_FOR: Readonly<Record<string, readonly string[]>> = { budget: ['request-budget', 'budget-goals'] };

export function dataTable(r: BenchResult): Table {
  return {
    id: 'data',
    title: 'Data sizes (simulator, seed 42)',
    head: TABLE_HEADS.data,
    numericFrom: 1,
    rows: r.sizes.map((s) => [
      s.size,
      count(s.data.connectors),
      count(s.data.connectorProfiles),
      count(s.data.connectorRuns),
      count(s.data.actions),
      count(s.data.actionJobs),
      count(s.data.trackedNames),
    ]),
  };
}

export function pollTable(r: BenchResult): Table {
  return {
    id: 'polls',
    title: `Full poll of every endpoint (first poll, budget raised to ${count(RAISED_RATE)}/min)`,
    head: TABLE_HEADS.polls,
    numericFrom: 1,
    rows: r.sizes.map((s) => [
      s.size,
      count(s.first.requests),
      ms(s.first.wallMs),
      ms(s.first.budgetWaitSeconds * 1000),
      ms(s.first.cpuMs),
      ms(s.first.maxLoopDelayMs),
      count(s.first.cmdbSeries),
      count(s.first.exposedSeries),
      bytes(s.first.textBytes),
      bytes(s.first.memory.heapUsedBytes),
      bytes(s.first.memory.rssBytes),
      bytes(s.memoryAtStart.rssBytes),
    ]),
  };
}

export function requestsTable(r: BenchResult): Table {
  return {
    id: 'requests',
    title: 'CMDB requests of the first poll, by endpoint (simulator request log)',
    head: TABLE_HEADS.requests,
    numericFrom: 1,
    rows: r.sizes.map((s) => [s.size, ...ENDPOINT_COLUMNS.map((e) => count(s.first.requestsByEndpoint[e] ?? 0))]),
  };
}

export function laterPollsTable(r: BenchResult): Table {
  return {
    id: 'later-polls',
    title: 'Later polls: at once (nothing changed) and one hour later (Action jobs refresh due)',
    head: TABLE_HEADS['later-polls'],
    numericFrom: 1,
    rows: r.sizes.map((s) => [
      s.size,
      count(s.repeat.requests),
      ms(s.repeat.wallMs),
      ms(s.repeat.cpuMs),
      count(s.hourLater.requests),
      ms(s.hourLater.wallMs),
      ms(s.hourLater.cpuMs),
    ]),
  };
}

const rate = (n: number) => (Number.isFinite(n) ? n.toFixed(n >= 100 ? 0 : 1) : '–');

export function compareTable(r: BenchResult): Table {
  const rows: string[][] = [];
  for (const s of r.sizes) {
    for (const [format, figures] of [['', s.compare] as const, ...Object.entries(s.formats ?? {})]) {
      if (!figures) continue;
      for (const encoding of ['identity', 'gzip'] as const) {
        const exporterCells = cellsOf(figures, 'exporter', encoding);
        const bareCells = cellsOf(figures, 'bare', encoding);
        const e = pooled(exporterCells);
        const b = pooled(bareCells);
        const perRound = exporterCells.map((c) => {
          const bare = bareCells.find((x) => x.round === c.round);
          return bare ? c.perSecond / bare.perSecond : Number.NaN;
        });
        rows.push([
          s.size,
          format ? `${format} ${encoding}` : encoding,
          bytes(encoding === 'gzip' ? figures.gzipBytes : figures.plainBytes),
          rate(e.perSecond),
          ms(e.p99),
          ms(e.cpuPerRequest),
          rate(b.perSecond),
          ms(b.p99),
          ms(b.cpuPerRequest),
          `${(e.perSecond / b.perSecond).toFixed(2)}×`,
          perRound.map((x) => x.toFixed(2)).join(', '),
          count(e.requests + b.requests),
        ]);
      }
    }
  }
  const c = r.settings.compare;
  return {
    id: 'compare',
    title: `GET /metrics, exporter against a bare node:http server serving the same bytes (${c.clients} keep-alive connections, closed loop, ${c.rounds} rounds of ≤ ${c.seconds} s and ≤ ${count(c.maxRequests)} requests per cell, alternating)`,
    head: TABLE_HEADS.compare,
    numericFrom: 2,
    rows,
  };
}

export function memoryTable(r: BenchResult): Table {
  return {
    id: 'memory',
    title: `Exporter memory: idle, and while ${r.settings.compare.clients} clients scrape (VmRSS sampled every 100 ms)`,
    head: TABLE_HEADS.memory,
    numericFrom: 1,
    rows: r.sizes.map((s) => [s.size, bytes(s.compare.idleRssBytes), bytes(loadedRss(s.compare)), `${rssGrowth(s.compare).toFixed(2)}×`, bytes(s.compare.peakRssBytes)]),
  };
}

export function swapTable(r: BenchResult): Table {
  return {
    id: 'swap',
    title: `A change swapped in, until the gzip response is ready: every value of the largest endpoint changed, then a status-only change (the median of ${SWAP_RUNS} runs by longest block)`,
    head: TABLE_HEADS.swap,
    numericFrom: 1,
    rows: r.sizes.map((s) => [
      s.size,
      count(s.swap.data.series),
      ms(s.swap.data.maxLoopDelayMs),
      ms(s.swap.data.wallMs),
      ms(s.swap.data.cpuMs),
      ms(s.swap.status.maxLoopDelayMs),
      ms(s.swap.status.wallMs),
      ms(s.swap.status.cpuMs),
    ]),
  };
}

export function pollingTable(r: BenchResult): Table {
  return {
    id: 'polling',
    title: 'One client scraping with gzip back to back while the exporter polls back to back',
    head: TABLE_HEADS.polling,
    numericFrom: 1,
    rows: r.sizes.flatMap((s) => {
      const p = s.pollingScrape;
      if (!p) return [];
      return [[s.size, String(p.seconds), count(p.polls), count(p.requests), ms(p.latency.p50), ms(p.latency.p99), ms(p.latency.max), count(p.errors), bytes(p.peakRssBytes)]];
    }),
  };
}

function budgetRow(s: SizeResult): string[] {
  const v = hourlyVolume(s);
  return [
    s.size,
    count(s.first.requests),
    seconds(budgetSeconds(s.first.requests, DEFAULT_RATE)),
    `C=${v.connectorPages} P=${v.actionPages} A=${v.actions} J=${v.changedActions} T=${v.trackedNames}`,
    count(v.perHour),
    percent(v.budgetShare),
    seconds(v.refreshBurstMinutes * 60),
  ];
}

export function budgetTable(r: BenchResult): Table {
  return {
    id: 'budget',
    title: `Request budget at the default ${DEFAULT_RATE} requests/min (burst ${r.budget.burst}): computed from the measured request counts`,
    head: TABLE_HEADS.budget,
    numericFrom: 1,
    rows: r.sizes.map(budgetRow),
  };
}

export function steadyStateTable(r: BenchResult): Table {
  return {
    title: `Estimated steady-state CPU an hour at the default intervals (${PROMETHEUS_REPLICAS} Prometheus servers scraping every ${SCRAPE_INTERVAL_SECONDS} s with gzip)`,
    id: 'steady-state',
    head: TABLE_HEADS['steady-state'],
    numericFrom: 1,
    rows: r.sizes.map((size) => {
      const s = steadyState(size);
      const cpu = (x: number) => `${x.toFixed(1)} s`;
      return [size.size, cpu(s.polls), `${cpu(s.rerenders)} (${s.rerendersPerHour}×)`, `${cpu(s.scrapes)} (${s.scrapesPerHour}×)`, cpu(s.total), percent(s.coreShare)];
    }),
  };
}

export function allTables(r: BenchResult): Table[] {
  return [dataTable(r), pollTable(r), requestsTable(r), laterPollsTable(r), compareTable(r), memoryTable(r), swapTable(r), pollingTable(r), steadyStateTable(r), ...(r.requestBudget ? [] : [budgetTable(r)])];
}
