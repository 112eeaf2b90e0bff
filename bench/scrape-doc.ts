/**
 * The /metrics part of docs/performance.md: how the comparison with a bare server, the memory, the
 * swap and the scrapes-while-polling cells were measured, and each goal of docs/performance.md's
 * design with the figure of this run beside it.
 */
import { GZIP_LEVEL, SELF_METRICS_MAX_AGE_MS } from '../src/exposition/responses.js';
import { SLICE } from '../src/store/series.js';
import { gzipCpuPerRequest } from './analysis.js';
import { ratio, rssGrowth } from './compare-run.js';
import { bytes, count, ms } from './format.js';
import type { BenchResult, SizeResult } from './results.js';
import { SWAP_RUNS } from './sizes.js';

export const SCRAPE_GOALS = { ratio: 0.8, pollingP99Ms: 50, swapStallMs: 20, rssGrowth: 1.3 } as const;

/** The sizes the throughput goal names (~20k and ~200k series). */
const GOAL_SIZES = ['medium', 'large'] as const;

export function scrapeMethod(r: BenchResult): string {
  const c = r.settings.compare;
  return `- **Against the physical limit.** After the polls, one /metrics body is saved as the exporter
  served it, plain and gzipped; a bare \`node:http\` server (bench/bare-server.ts) in a process of its own
  answers every request with those very bytes and their \`Content-Length\`. A closed loop of ${c.clients}
  keep-alive connections (each sends its next request once it has read the whole answer) alternates
  between the exporter and the bare server, ${c.rounds} rounds per encoding, the order swapped each
  round; each cell runs ${c.seconds} s or ${count(c.maxRequests)} requests, whichever comes first, after 3 warm-up
  requests. The ratio is the exporter's requests a second over the bare server's, all rounds pooled.
  CPU per request is the process's user + system time from \`/proc/<pid>/stat\` (all threads: socket
  writes and zlib included) over its requests; p99 is the worst round's. Latency runs from sending the
  request to having read the whole body, so it includes the client's work on the same cores. The
  exporter's cells are served from the reused response: the bytes of the CMDB data are made once per
  change, and the exporter's own metrics rendered at most once every ${SELF_METRICS_MAX_AGE_MS / 1000} s. The staleness bound: a
  scrape never returns data older than the last completed poll, nor self-metrics older than ${SELF_METRICS_MAX_AGE_MS / 1000} s (docs/design.md).
- **Memory under load.** The exporter's VmRSS, read from \`/proc\` every 100 ms: over 2 s with nothing
  asked of it before the cells (idle), and during its cells (${c.clients} scrapers); VmHWM after the cells.
- **Swap.** In the exporter process: the largest endpoint's series swapped in again with every value
  changed (as a poll that changed everything), until the gzip response is ready; then a change of
  status only (a poll that needed no request). The new samples are made before the timing starts and
  moved to the old generation by two young collections (\`gc({ type: 'minor' })\`), as a poll's samples
  are by the time they are swapped in: copying the benchmark's own input is not the exporter's stall.
  The cell runs ${SWAP_RUNS} times; the figures are those of the run with the median longest block.
  Before each run the exporter sits idle for 2 s under the same timer chain: its longest block there
  is what the busy machine alone costs (the goals section quotes it beside the swap's).
  The longest block is the largest gap between the turns of a
  1 ms timer chain meanwhile (\`monitorEventLoopDelay\` misses a block that starts before its first sample); CPU is the process's (zlib's threads included).
  \`npm run bench -- --only swap --sizes large --repeats 3\` runs this cell alone; \`--node-option=--trace-gc\`
  adds the collector's pauses, with the measured changes marked.
- **Scrapes while polling** (sizes: ${r.settings.pollingSizes.join(', ')}). One client scrapes with gzip back to back for
  ${r.settings.pollingSeconds} s while the exporter runs \`pollOnce()\` back to back, its clock five minutes on each
  time; peak RSS is VmHWM since the process started.`;
}

const verdict = (pass: boolean) => (pass ? 'met' : '**not met**');

export function scrapeGoals(r: BenchResult): string {
  const lines: string[] = [];
  for (const name of GOAL_SIZES) {
    const s = r.sizes.find((x) => x.size === name);
    if (!s) continue;
    for (const encoding of ['identity', 'gzip'] as const) {
      const x = ratio(s.compare, encoding);
      lines.push(`- Throughput at ${count(s.first.exposedSeries)} series (${name}), ${encoding}: ${x.toFixed(2)}× the bare server — goal ≥ ${SCRAPE_GOALS.ratio}×: ${verdict(x >= SCRAPE_GOALS.ratio)}.`);
      for (const [format, figures] of Object.entries(s.formats ?? {})) {
        if (!figures) continue;
        const y = ratio(figures, encoding);
        lines.push(`- Throughput at ${count(s.first.exposedSeries)} series (${name}), ${format}, ${encoding}: ${y.toFixed(2)}× the bare server — goal ≥ ${SCRAPE_GOALS.ratio}×: ${verdict(y >= SCRAPE_GOALS.ratio)}.`);
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
    const idle = large.swap.idleMaxLoopDelayMs;
    const floor = idle === undefined ? '' : ` (the same process idle for 2 s just before: ${ms(idle)})`;
    lines.push(`- Swap stall at ${count(large.swap.data.series)} changed series (large): ${ms(stall)}${floor} — goal < ${SCRAPE_GOALS.swapStallMs} ms: ${verdict(stall < SCRAPE_GOALS.swapStallMs)}.${stall < SCRAPE_GOALS.swapStallMs ? '' : ` The swap runs in slices of ${count(SLICE)} series, keeps one new object per series and copies no whole exposition; a longer block is most often the garbage collector or a busy machine: \`npm run bench -- --only swap --sizes large --node-option=--trace-gc\` shows which.`}`);
    const g = rssGrowth(large.compare);
    lines.push(`- RSS with ${r.settings.compare.clients} concurrent scrapers (large): ${g.toFixed(2)}× idle — goal ≤ ${SCRAPE_GOALS.rssGrowth}×: ${verdict(g <= SCRAPE_GOALS.rssGrowth)}.`);
  }
  return `## /metrics against its goals\n\nFrom this run (each ratio side by side in one run; per-round ratios vary widely on this shared machine, see the table):\n\n${lines.join('\n')}\n`;
}

/** The scrape figures in prose, for "What the figures mean". */
export function scrapeCostText(big: SizeResult): string {
  const plain = big.compare.plainBytes;
  const zipped = big.compare.gzipBytes;
  return `- **Scrapes cost what serving a file costs.** The CMDB data's exposition is kept as UTF-8 bytes,
  made once per change, and its gzip (level ${GZIP_LEVEL}) as one gzip stream of the whole body made once per change,
  off the event loop; a scrape writes the same Buffers for every client, with \`Content-Length\`. Only
  \`cmdb_license_days_until_expiry\` and the exporter's own metrics are made apart, at most once a second,
  as two small extra pieces. At the ${big.size} size the body is ${bytes(plain)} (${bytes(zipped)} gzipped), and a gzip
  scrape costs the exporter ${ms(gzipCpuPerRequest(big))} of CPU, socket writes included.
- **Changes.** A change of the largest endpoint's data at the ${big.size} size takes ${ms(big.swap.data.wallMs)} until the gzip
  response is ready (${ms(big.swap.data.cpuMs)} of CPU, compressing ${bytes(plain)} in zlib's threads included), holding the
  event loop ${ms(big.swap.data.maxLoopDelayMs)} at most: the series are prepared in slices of ${count(SLICE)} and swapped in whole,
  with one new object per series (the label text) for the garbage collector, and the body is compressed in zlib's threads. A
  poll that brings the same series, or changes only status, re-makes only the small status part, and the gzip of the body
  (${ms(big.swap.status.wallMs)}).`;
}
