/** The benchmark's figures as tables: the same ones go to the console and to docs/performance.md. */
import { PROMETHEUS_REPLICAS, SCRAPE_INTERVAL_SECONDS, steadyState } from './analysis.js';
import { budgetSeconds, DEFAULT_RATE, hourlyVolume } from './budget.js';
import { bytes, count, ms, percent, seconds, type Table } from './format.js';
import type { BenchResult, SizeResult } from './results.js';
import { RAISED_RATE } from './sizes.js';
import { ENDPOINTS } from '../src/api/endpoints.js';

/** One column per endpoint, in the order of the endpoint list. */
const ENDPOINT_COLUMNS = ENDPOINTS;

export function dataTable(r: BenchResult): Table {
  return {
    title: 'Data sizes (simulator, seed 42)',
    head: ['size', 'connectors', 'connector profiles', 'connector runs', 'Actions', 'Action jobs', 'tracked names'],
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
    title: `Full poll of every endpoint (first poll, budget raised to ${count(RAISED_RATE)}/min)`,
    head: ['size', 'CMDB requests', 'wall time', 'budget wait', 'exporter CPU', 'first render', 'CMDB series', '/metrics lines', '/metrics size', 'heap after GC', 'RSS', 'RSS at start'],
    numericFrom: 1,
    rows: r.sizes.map((s) => [
      s.size,
      count(s.first.requests),
      ms(s.first.wallMs),
      ms(s.first.budgetWaitSeconds * 1000),
      ms(s.first.cpuMs),
      ms(s.first.renderMs),
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
    title: 'CMDB requests of the first poll, by endpoint (simulator request log)',
    head: ['size', ...ENDPOINT_COLUMNS],
    numericFrom: 1,
    rows: r.sizes.map((s) => [s.size, ...ENDPOINT_COLUMNS.map((e) => count(s.first.requestsByEndpoint[e] ?? 0))]),
  };
}

export function laterPollsTable(r: BenchResult): Table {
  return {
    title: 'Later polls: at once (nothing changed) and one hour later (Action jobs refresh due)',
    head: ['size', 'requests at once', 'wall time', 'CPU', 'requests 1 h later', 'wall time', 'CPU', 'RSS after scrapes'],
    numericFrom: 1,
    rows: r.sizes.map((s) => [
      s.size,
      count(s.repeat.requests),
      ms(s.repeat.wallMs),
      ms(s.repeat.cpuMs),
      count(s.hourLater.requests),
      ms(s.hourLater.wallMs),
      ms(s.hourLater.cpuMs),
      bytes(s.memoryAfterScrapes.rssBytes),
    ]),
  };
}

export function renderTable(r: BenchResult): Table {
  return {
    title: 'In-process cost per call (p50 / p99)',
    head: ['size', 'metricsText() unchanged', 'store part', 'prom-client part', 're-render after a change', 'gzip of the text'],
    numericFrom: 1,
    rows: r.sizes.map((s) => {
      const f = s.render;
      const pair = (d: { p50: number; p99: number }) => `${ms(d.p50)} / ${ms(d.p99)}`;
      return [s.size, pair(f.scrape), pair(f.storeText), pair(f.registry), pair(f.rerender), pair(f.gzip)];
    }),
  };
}

export function scrapeTable(r: BenchResult): Table {
  const rows: string[][] = [];
  for (const s of r.sizes) {
    for (const c of s.scrape) {
      rows.push([
        s.size,
        String(c.clients),
        c.gzip ? 'gzip' : 'identity',
        count(c.requests),
        c.perSecond.toFixed(c.perSecond >= 100 ? 0 : 1),
        ms(c.latency.p50),
        ms(c.latency.p90),
        ms(c.latency.p99),
        ms(c.latency.max),
        bytes(c.responseBytes),
        count(c.errors),
      ]);
    }
  }
  return {
    title: `GET /metrics over HTTP, keep-alive (each cell ≤ ${r.settings.scrapeSeconds} s and ≤ ${count(r.settings.scrapeMaxRequests)} requests)`,
    head: ['size', 'clients', 'encoding', 'requests', 'req/s', 'p50', 'p90', 'p99', 'max', 'body', 'errors'],
    numericFrom: 1,
    rows,
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
    title: `Request budget at the default ${DEFAULT_RATE} requests/min (burst ${r.budget.burst}): computed from the measured request counts`,
    head: ['size', 'first-poll requests', 'first poll takes', 'docs/design.md inputs', 'requests/hour', 'of budget', 'hourly jobs refresh'],
    numericFrom: 1,
    rows: r.sizes.map(budgetRow),
  };
}

export function steadyStateTable(r: BenchResult): Table {
  return {
    title: `Estimated steady-state CPU an hour at the default intervals (${PROMETHEUS_REPLICAS} Prometheus servers scraping every ${SCRAPE_INTERVAL_SECONDS} s with gzip)`,
    head: ['size', 'polls', 're-renders', 'scrapes', 'total', 'of one core'],
    numericFrom: 1,
    rows: r.sizes.map((size) => {
      const s = steadyState(size);
      const cpu = (x: number) => `${x.toFixed(1)} s`;
      return [size.size, cpu(s.polls), `${cpu(s.rerenders)} (${s.rerendersPerHour}×)`, `${cpu(s.scrapes)} (${s.scrapesPerHour}×)`, cpu(s.total), percent(s.coreShare)];
    }),
  };
}

export function allTables(r: BenchResult): Table[] {
  return [dataTable(r), pollTable(r), requestsTable(r), laterPollsTable(r), renderTable(r), scrapeTable(r), steadyStateTable(r), ...(r.requestBudget ? [] : [budgetTable(r)])];
}
