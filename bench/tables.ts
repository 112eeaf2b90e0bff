/**
 * The figures of `npm run bench`'s size cells as tables, the /metrics goals with this run's figure
 * beside each, and the figures derived from them (growth per connector profile, what to expect).
 */
import { gzipCpuPerRequest, growth, PROMETHEUS_REPLICAS, SCRAPE_INTERVAL_SECONDS, steadyState } from './analysis.js';
import { cellsOf, loadedRss, pooled, ratio, rssGrowth } from './compare-run.js';
import { burstFor } from '../src/cmdb/budget.js';
import { budgetSeconds, DEFAULT_RATE, hourlyVolume } from './budget.js';
import { bytes, count, ms, percent, seconds, type Table } from './format.js';
import type { BenchResult, SizeResult } from './results.js';
import { RAISED_RATE, SWAP_RUNS } from './sizes.js';
import { ENDPOINTS } from '../src/api/endpoints.js';

/** A table with one row per size: the size, then what `row` gives (a size it gives nothing for is left out). */
function bySize(r: BenchResult, title: string, head: readonly string[], row: (s: SizeResult) => string[] | undefined): Table {
  const rows = r.sizes.flatMap((s) => {
    const cells = row(s);
    return cells ? [[s.size, ...cells]] : [];
  });
  return { title, head: ['size', ...head], numericFrom: 1, rows };
}

const dataTable = (r: BenchResult) =>
  bySize(r, 'Data sizes (simulator, seed 42)', ['connectors', 'connector profiles', 'connector runs', 'Actions', 'Action jobs', 'tracked names'], (s) =>
    [s.data.connectors, s.data.connectorProfiles, s.data.connectorRuns, s.data.actions, s.data.actionJobs, s.data.trackedNames].map(count),
  );

const pollTable = (r: BenchResult) =>
  bySize(
    r,
    `Full poll of every endpoint (first poll, budget raised to ${count(RAISED_RATE)}/min)`,
    ['CMDB requests', 'wall time', 'budget wait', 'exporter CPU', 'longest event-loop block', 'CMDB series', '/metrics lines', '/metrics size', 'heap after GC', 'RSS', 'RSS at start'],
    ({ first: f, memoryAtStart }) => [
      count(f.requests),
      ...[f.wallMs, f.budgetWaitSeconds * 1000, f.cpuMs, f.maxLoopDelayMs].map(ms),
      count(f.cmdbSeries),
      count(f.exposedSeries),
      ...[f.textBytes, f.memory.heapUsedBytes, f.memory.rssBytes, memoryAtStart.rssBytes].map(bytes),
    ],
  );

const requestsTable = (r: BenchResult) =>
  bySize(r, 'CMDB requests of the first poll, by endpoint (simulator request log)', ENDPOINTS, (s) => ENDPOINTS.map((e) => count(s.first.requestsByEndpoint[e] ?? 0)));

const laterPollsTable = (r: BenchResult) =>
  bySize(r, 'Later polls: at once (nothing changed) and one hour later (Action jobs refresh due)', ['requests at once', 'wall time', 'CPU', 'requests 1 h later', 'wall time', 'CPU'], (s) =>
    [s.repeat, s.hourLater].flatMap((p) => [count(p.requests), ms(p.wallMs), ms(p.cpuMs)]),
  );

const rate = (n: number) => (Number.isFinite(n) ? n.toFixed(n >= 100 ? 0 : 1) : '–');

/** A size's /metrics comparisons: the text format's (format ''), then each other format's that ran. */
const comparisons = (s: SizeResult) => [['', s.compare] as const, ...Object.entries(s.formats ?? {})].flatMap(([format, f]) => (f ? [[format, f] as const] : []));

function compareTable(r: BenchResult): Table {
  const rows: string[][] = [];
  for (const s of r.sizes) {
    for (const [format, figures] of comparisons(s)) {
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
    title: `GET /metrics, exporter against a bare node:http server serving the same bytes (${c.clients} keep-alive connections, closed loop, ${c.rounds} rounds of ≤ ${c.seconds} s and ≤ ${count(c.maxRequests)} requests per cell, alternating)`,
    head: ['size', 'encoding', 'body', 'exporter req/s', 'p99', 'CPU/req', 'bare req/s', 'p99', 'CPU/req', 'ratio', 'ratio per round', 'requests'],
    numericFrom: 2,
    rows,
  };
}

const memoryTable = (r: BenchResult) =>
  bySize(
    r,
    `Exporter memory: idle, and while ${r.settings.compare.clients} clients scrape (VmRSS sampled every 100 ms)`,
    ['idle RSS', `RSS, ${r.settings.compare.clients} scrapers`, 'ratio', 'peak RSS (VmHWM)'],
    ({ compare: c }) => [bytes(c.idleRssBytes), bytes(loadedRss(c)), `${rssGrowth(c).toFixed(2)}×`, bytes(c.peakRssBytes)],
  );

const swapTable = (r: BenchResult) =>
  bySize(
    r,
    `A change swapped in, until the gzip response is ready: every value of the largest endpoint changed, then a status-only change (the median of ${SWAP_RUNS} runs by longest block)`,
    ['series changed', 'longest block', 'until gzip ready', 'CPU', 'status-only: longest block', 'until gzip ready', 'CPU'],
    ({ swap: { data, status } }) => [count(data.series), ...[data, status].flatMap((c) => [c.maxLoopDelayMs, c.wallMs, c.cpuMs].map(ms))],
  );

const pollingTable = (r: BenchResult) =>
  bySize(r, 'One client scraping with gzip back to back while the exporter polls back to back', ['seconds', 'polls', 'gzip scrapes', 'p50', 'p99', 'max', 'errors', 'peak RSS (VmHWM)'], ({ pollingScrape: p }) =>
    p ? [String(p.seconds), count(p.polls), count(p.requests), ms(p.latency.p50), ms(p.latency.p99), ms(p.latency.max), count(p.errors), bytes(p.peakRssBytes)] : undefined,
  );

const steadyStateTable = (r: BenchResult) =>
  bySize(
    r,
    `Estimated steady-state CPU an hour at the default intervals (${PROMETHEUS_REPLICAS} Prometheus servers scraping every ${SCRAPE_INTERVAL_SECONDS} s with gzip)`,
    ['polls', 'changes', 'scrapes', 'total', 'of one core'],
    (size) => {
      const s = steadyState(size);
      const cpu = (x: number) => `${x.toFixed(1)} s`;
      return [cpu(s.polls), `${cpu(s.rerenders)} (${s.rerendersPerHour}×)`, `${cpu(s.scrapes)} (${s.scrapesPerHour}×)`, cpu(s.total), percent(s.coreShare)];
    },
  );

/** The model of docs/design.md fed with the measured request counts (docs/scaling.md quotes it). */
const budgetTable = (r: BenchResult) =>
  bySize(
    r,
    `Request budget at the default ${DEFAULT_RATE} requests/min (burst ${burstFor(DEFAULT_RATE)}): computed from the measured request counts, J = A / 2`,
    ['first-poll requests', 'first poll takes', 'docs/design.md inputs', 'requests/hour', 'of budget', 'hourly jobs refresh'],
    (s) => {
      const v = hourlyVolume(s);
      const inputs = `C=${v.connectorPages} P=${v.actionPages} A=${v.actions} J=${v.changedActions} T=${v.trackedNames}`;
      return [count(s.first.requests), seconds(budgetSeconds(s.first.requests, DEFAULT_RATE)), inputs, count(v.perHour), percent(v.budgetShare), seconds(v.refreshBurstMinutes * 60)];
    },
  );

export function allTables(r: BenchResult): Table[] {
  return [dataTable(r), pollTable(r), requestsTable(r), laterPollsTable(r), compareTable(r), memoryTable(r), swapTable(r), pollingTable(r), steadyStateTable(r), budgetTable(r)];
}

const SCRAPE_GOALS = { ratio: 0.8, pollingP99Ms: 50, swapStallMs: 20, rssGrowth: 1.3 } as const;

const verdict = (pass: boolean) => (pass ? 'met' : '**not met**');

/** Each /metrics goal with this run's figure beside it: throughput at ~20k and ~200k series, scrapes while polling, the swap stall, RSS under load. */
export function goalLines(r: BenchResult): string[] {
  const lines: string[] = [];
  for (const s of r.sizes.filter((x) => x.size !== 'small')) {
    for (const encoding of ['identity', 'gzip'] as const) {
      for (const [format, figures] of comparisons(s)) {
        const x = ratio(figures, encoding);
        lines.push(`- Throughput at ${count(s.first.exposedSeries)} series (${s.size}), ${format ? `${format}, ` : ''}${encoding}: ${x.toFixed(2)}× the bare server — goal ≥ ${SCRAPE_GOALS.ratio}×: ${verdict(x >= SCRAPE_GOALS.ratio)}.`);
      }
    }
  }
  for (const s of r.sizes) {
    const p = s.pollingScrape;
    if (p) lines.push(`- Scrape p99 while polls run (${s.size}, ${count(s.first.exposedSeries)} series): ${ms(p.latency.p99)} (max ${ms(p.latency.max)}) — goal < ${SCRAPE_GOALS.pollingP99Ms} ms: ${verdict(p.latency.p99 < SCRAPE_GOALS.pollingP99Ms)}.`);
  }
  const large = r.sizes.find((x) => x.size === 'large');
  if (large) {
    const stall = large.swap.data.maxLoopDelayMs;
    const idle = ms(large.swap.idleMaxLoopDelayMs);
    lines.push(`- Swap stall at ${count(large.swap.data.series)} changed series (large): ${ms(stall)} (the same process idle for 2 s just before: ${idle}) — goal < ${SCRAPE_GOALS.swapStallMs} ms: ${verdict(stall < SCRAPE_GOALS.swapStallMs)}.`);
    const g = rssGrowth(large.compare);
    lines.push(`- RSS with ${r.settings.compare.clients} concurrent scrapers (large): ${g.toFixed(2)}× idle — goal ≤ ${SCRAPE_GOALS.rssGrowth}×: ${verdict(g <= SCRAPE_GOALS.rssGrowth)}.`);
  }
  return lines;
}

/** The figures "What the figures mean" quotes: growth per 1,000 connector profiles, and what to expect at each size. */
export function derivedLines(r: BenchResult): string[] {
  const g = growth(r.sizes);
  const sorted = [...r.sizes].sort((a, b) => a.data.connectorProfiles - b.data.connectorProfiles);
  const big = sorted[sorted.length - 1];
  const lines = g && big
    ? [
        `- ${g.seriesPerProfile.toFixed(0)} series a connector profile; the ${big.size} size: ${count(big.first.cmdbSeries)} series, ${bytes(big.first.textBytes)} of /metrics, ${g.bytesPerSeries.toFixed(0)} bytes a series; its connector history in ${count(big.first.requestsByEndpoint.connector ?? 0)} requests.`,
        `- Per 1,000 connector profiles: ${count(g.seriesPerProfile * 1000)} series, ${g.heapMiB.toFixed(1)} MiB of heap (${g.rssMiB.toFixed(0)} MiB of RSS right after a poll), ${ms(g.repeatPollCpuMs)} of CPU per repeated poll, ${ms(g.changeCpuMs)} per change; the default maxSeries is reached at ~${count(g.profilesAtDefaultCap)} profiles.`,
      ]
    : [];
  for (const s of sorted) {
    const p50 = cellsOf(s.compare, 'exporter', 'gzip')[0]?.latency.p50 ?? Number.NaN;
    lines.push(
      `- ${s.size} (${count(s.data.connectorProfiles)} connector profiles): ${count(s.first.cmdbSeries)} series, first poll ${ms(s.first.wallMs)}, ${bytes(s.first.memory.rssBytes)} RSS, gzip scrapes of ${ms(p50)} (p50, ${r.settings.compare.clients} clients) at ${ms(gzipCpuPerRequest(s))} of CPU, ${ms(s.swap.data.wallMs)} from a change of every series to the new gzip response, ${percent(steadyState(s).coreShare)} of one core.`,
    );
  }
  return lines;
}
