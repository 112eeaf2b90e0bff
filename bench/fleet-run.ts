/**
 * The fleet cell: 1, 50 and 200 small stacks in one exporter, scraped as one target each
 * (/metrics?stack=NAME). Per fleet size: the time until /readyz is 200, RSS (total and per stack),
 * CPU per stack-hour at the busy cadence (every group every 10 s), the sizes of the whole and of one
 * stack's exposition, and one stack's scrape against a bare node:http server serving the same
 * bytes (requests a second and CPU per request of each process). Every wait and load is bounded.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startChild, untilReady, type Child } from './children.js';
import { saved, withBareServer } from './compare-run.js';
import { stackName, type FleetInput } from './fleet-exporter.js';
import { cpuMs, residentBytes } from './proc.js';
import { scrapeLoad } from './scrape-load.js';
import type { SimulatorReady } from './simulator-process.js';

export interface FleetOptions {
  readonly counts: readonly number[];
  /** The CPU window per fleet size. */
  readonly cpuSeconds: number;
  /** Each scrape load cell. */
  readonly scrapeSeconds: number;
}

export const FLEET_DEFAULTS: FleetOptions = { counts: [1, 50, 200], cpuSeconds: 20, scrapeSeconds: 4 };
const READY_TIMEOUT_MS = 180_000;
/** The window without scrapes before each load on the exporter, for its background CPU. */
const QUIET_MS = 3000;

/**
 * Scrape load on `url` while reading the CPU of process `pid`. `backgroundShare`: the CPU the process
 * spends without scrapes (the fleet's polls), per ms of wall time, taken off so that the figure is
 * the scrapes' own.
 */
async function measured(url: string, pid: number, gzip: boolean, seconds: number, quietMs = 0) {
  let backgroundShare = 0;
  if (quietMs > 0) {
    const q0 = await cpuMs(pid);
    const qt = performance.now();
    await sleep(quietMs);
    backgroundShare = ((await cpuMs(pid)) - q0) / (performance.now() - qt);
  }
  const c0 = await cpuMs(pid);
  const t0 = performance.now();
  const cell = await scrapeLoad({ url, clients: 4, gzip, maxRequests: 1_000_000, maxMs: seconds * 1000 });
  const gross = (await cpuMs(pid)) - c0;
  const net = gross - backgroundShare * (performance.now() - t0);
  const requests = Math.max(1, cell.requests);
  return { perSecond: cell.perSecond, cpuMsPerRequest: Math.max(0, net) / requests, grossCpuMsPerRequest: gross / requests };
}

async function fleetOf(n: number, sim: SimulatorReady, opts: FleetOptions, progress: (m: string) => void) {
  const input = (busy: boolean): FleetInput => ({ ...sim, stacks: n, busy });
  // The busy cadence first: ready time, RSS and the polls' CPU.
  const busy: Child = await startChild('fleet-exporter.ts', [JSON.stringify(input(true))], { exposeGc: false });
  let readySeconds: number;
  let rssBytes: number;
  let cpu: number;
  let wallMs: number;
  try {
    const { url, pid, startedAtMs } = busy.ready as { url: string; pid: number; startedAtMs: number };
    await untilReady(url, READY_TIMEOUT_MS);
    readySeconds = (Date.now() - startedAtMs) / 1000;
    progress(`fleet ${n}: ready in ${readySeconds.toFixed(1)} s; measuring CPU for ${opts.cpuSeconds} s`);
    const c0 = await cpuMs(pid);
    const t0 = performance.now();
    await sleep(opts.cpuSeconds * 1000);
    cpu = (await cpuMs(pid)) - c0;
    wallMs = performance.now() - t0;
    rssBytes = (await residentBytes(pid))?.rss ?? Number.NaN;
  } finally {
    await busy.stop();
  }
  // Then the scrapes, on the default intervals (as in production: the polls mostly quiet), so that
  // the figures are the scrapes' own and not the busy polls' contention for the thread pool.
  const exporter: Child = await startChild('fleet-exporter.ts', [JSON.stringify(input(false))], { exposeGc: false });
  try {
    const { url, pid } = exporter.ready as { url: string; pid: number };
    await untilReady(url, READY_TIMEOUT_MS);
    const whole = await saved(`${url}/metrics`);
    const stackUrl = `${url}/metrics?stack=${stackName(0)}`;
    const plain = await saved(stackUrl);
    const zipped = await saved(stackUrl, true);
    const scrapes = await withBareServer(plain, zipped, async (bare) => {
      const out = [];
      for (const encoding of ['plain', 'gzip'] as const) {
        progress(`fleet ${n}: one stack's scrape, ${encoding}, ${opts.scrapeSeconds} s each against the exporter and the bare server`);
        const e = await measured(stackUrl, pid, encoding === 'gzip', opts.scrapeSeconds, QUIET_MS);
        const b = await measured(`${bare.url}/metrics`, bare.pid, encoding === 'gzip', opts.scrapeSeconds);
        out.push({
          encoding,
          bytes: encoding === 'gzip' ? zipped.length : plain.length,
          exporterPerSecond: e.perSecond,
          barePerSecond: b.perSecond,
          exporterCpuMsPerRequest: e.cpuMsPerRequest,
          exporterGrossCpuMsPerRequest: e.grossCpuMsPerRequest,
          bareCpuMsPerRequest: b.cpuMsPerRequest,
        });
      }
      return out;
    });
    const wholeSeries = whole.toString('utf8').split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;
    return {
      stacks: n,
      readySeconds,
      rssBytes,
      cpuSecondsPerStackHour: (cpu / 1000 / n) * (3_600_000 / wallMs),
      corePercent: (cpu / wallMs) * 100,
      wholeBytes: whole.length,
      wholeSeries,
      stackBytes: plain.length,
      scrapes,
    };
  } finally {
    await exporter.stop();
  }
}

export async function benchFleet(opts: FleetOptions, progress: (m: string) => void) {
  const sim = await startChild('simulator-process.ts', [JSON.stringify({})]);
  try {
    const cells = [];
    for (const n of opts.counts) cells.push(await fleetOf(n, sim.ready as SimulatorReady, opts, progress));
    return cells;
  } finally {
    await sim.stop();
  }
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

export function fleetLines(cells: Awaited<ReturnType<typeof benchFleet>>): string[] {
  const one = cells.find((c) => c.stacks === 1);
  const lines = [
    'Fleet (small stacks; ready, RSS and CPU with every group every 10 s; one stack scraped as /metrics?stack=NAME by',
    '4 keep-alive clients, on the default intervals; the exporter\'s CPU a scrape net of its CPU in the 3 s without scrapes before):',
  ];
  for (const c of cells) {
    const marginal = one && c.stacks > 1 ? `, ${mib((c.rssBytes - one.rssBytes) / (c.stacks - 1))} per added stack` : '';
    lines.push(
      `  ${c.stacks} stack(s): ready ${c.readySeconds.toFixed(1)} s; RSS ${mib(c.rssBytes)} (${mib(c.rssBytes / c.stacks)} a stack${marginal}); ` +
        `CPU ${c.corePercent.toFixed(1)} % of a core, ${c.cpuSecondsPerStackHour.toFixed(1)} CPU-s per stack-hour; ` +
        `/metrics ${mib(c.wholeBytes)} (${c.wholeSeries} series), one stack ${(c.stackBytes / 1024).toFixed(1)} KiB`,
    );
    for (const s of c.scrapes) {
      lines.push(
        `    one stack, ${s.encoding} (${(s.bytes / 1024).toFixed(1)} KiB): exporter ${s.exporterPerSecond.toFixed(0)}/s at ${s.exporterCpuMsPerRequest.toFixed(3)} ms CPU a scrape (${s.exporterGrossCpuMsPerRequest.toFixed(3)} ms gross); ` +
          `bare server ${s.barePerSecond.toFixed(0)}/s at ${s.bareCpuMsPerRequest.toFixed(3)} ms (${(s.exporterCpuMsPerRequest / s.bareCpuMsPerRequest).toFixed(2)}× its CPU)`,
      );
    }
  }
  return lines;
}
