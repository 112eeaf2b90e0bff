/**
 * Counters across restarts, end to end: the built daemon with --storage.path and
 * --web.openmetrics-created, every group polled every 10 s, scraped every second by this test (in
 * OpenMetrics, with each counter series' `_created`) while a real Prometheus 3 with
 * created-timestamp ingestion scrapes it too, through a proxy that always points at the running
 * process. The daemon is killed (SIGKILL) and started again, then stopped (SIGTERM) and started
 * again, on the same state folder. For every counter series seen in the last scrape before a restart
 * and in a scrape after it: either a new start (`_created` later than before), or the same start
 * and a value not lower. A counter under the same start that went down is a contradiction no
 * receiver can resolve (issue 44): with counters that belong to the process that counts, none is.
 * Prometheus reads the `_created` lines as starts, not as series of their own; a counter it stores
 * drops only across a restart, and there (each start older than the scrape that first sees it, as
 * Prometheus needs) to the 0 it writes at the new start: the count of the new process is kept whole.
 * Every wait ends with its event (a state write, counts after it, a scrape of each process by both
 * scrapers); the figures are printed.
 */
import { existsSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { stopAllAndCheck } from './harness/processes.js';
import { JOB, startPrometheus, type RunningPrometheus } from './harness/prometheus.js';
import { makeTempDir, removeDir, requirePart } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const STACK = 'counted';
const OPENMETRICS = 'application/openmetrics-text;version=1.0.0';
const WAIT = { timeoutMs: 120_000, intervalMs: 500 };

/** A counter series as served: its value and its start (`_created`, unix seconds). */
interface Counted {
  readonly value: number;
  readonly created: number | undefined;
}

/** One scrape of the test: which process answered, and its counter series by name and sorted labels. */
interface Scrape {
  readonly process: number;
  readonly counters: ReadonlyMap<string, Counted>;
}

/** `labels` text (`{a="1",b="2"}`) as sorted pairs: prom-client writes a series' labels in the order it was first counted with. */
function sortedLabels(text: string): string {
  const pairs = [...text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => `${m[1]}=${JSON.stringify(m[2])}`);
  return pairs.sort().join(',');
}

/** Every counter series of an OpenMetrics body (families declared `counter`): `_total` value and `_created` start. */
function countersOf(om: string): Map<string, Counted> {
  const families = new Set([...om.matchAll(/^# TYPE (\S+) counter$/gm)].map((m) => m[1] ?? ''));
  const values = new Map<string, number>();
  const starts = new Map<string, number>();
  for (const line of om.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const cut = line.lastIndexOf(' ');
    const brace = line.indexOf('{');
    const name = brace < 0 || brace > cut ? line.slice(0, cut) : line.slice(0, brace);
    const labels = brace < 0 || brace > cut ? '' : sortedLabels(line.slice(brace, cut));
    const suffix = name.endsWith('_total') ? '_total' : name.endsWith('_created') ? '_created' : undefined;
    if (!suffix) continue;
    const family = name.slice(0, -suffix.length);
    if (!families.has(family)) continue;
    (suffix === '_total' ? values : starts).set(`${family}{${labels}}`, Number(line.slice(cut + 1)));
  }
  return new Map([...values].map(([k, value]) => [k, { value, created: starts.get(k) }]));
}

/** What became of the counters across one restart. */
interface Across {
  /** Series in the last scrape before and in a scrape after. */
  readonly compared: number;
  readonly newStart: number;
  readonly sameStartNotLower: number;
  /** Same start and a lower value: the contradiction. */
  readonly lower: readonly string[];
  /** No `_created` on one side. */
  readonly noStart: readonly string[];
}

/** Each series of `before` against its first appearance in `after` (the new process's scrapes, in order). */
function across(before: ReadonlyMap<string, Counted>, after: readonly ReadonlyMap<string, Counted>[]): Across {
  let compared = 0;
  let newStart = 0;
  let sameStartNotLower = 0;
  const lower: string[] = [];
  const noStart: string[] = [];
  for (const [key, b] of before) {
    const a = after.find((s) => s.has(key))?.get(key);
    if (!a) continue;
    compared++;
    if (b.created === undefined || a.created === undefined) noStart.push(key);
    else if (a.created > b.created) newStart++;
    else if (a.created === b.created && a.value >= b.value) sameStartNotLower++;
    else lower.push(`${key}: ${b.value} at start ${b.created}, then ${a.value} at start ${a.created}`);
  }
  return { compared, newStart, sameStartNotLower, lower, noStart };
}

const dirs: string[] = [];
let sim: SimulatorServer | undefined;
let proxy: Server | undefined;

afterAll(async () => {
  await stopAllAndCheck(async () => {
    if (proxy) await new Promise((resolve) => proxy?.close(resolve));
    await sim?.close();
    for (const d of dirs) removeDir(d);
  });
});

/** A proxy on a port of its own to whichever exporter process runs now (Prometheus keeps one target across the restarts). */
async function startProxy(current: () => RunningExporter | undefined): Promise<string> {
  const server = createServer((req, res) => {
    const target = current();
    if (!target) {
      res.writeHead(503).end();
      return;
    }
    const upstream = request({ host: '127.0.0.1', port: target.port, path: req.url, headers: { ...req.headers, host: `127.0.0.1:${target.port}` } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    upstream.end();
  });
  proxy = server;
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('counters across kill -9 and SIGTERM with --storage.path', () => {
  it('every counter series comes back with a new start, or under its start at a value not lower; Prometheus sees a drop only at a restart', async () => {
    requirePart('prometheus');
    const dir = makeTempDir('restart-counters');
    dirs.push(dir);
    sim = await startSimulator({ size: { connectors: 10, profilesPerConnector: 2, runsPerConnector: 5, actions: 4 } });
    const config = writeExporterConfig(dir, {
      logLevel: 'info',
      stacks: [
        {
          name: STACK,
          baseUrl: sim.url,
          clientId: sim.clientId,
          secret: sim.secret,
          rateLimitPerMinute: 6000,
          actionJobsPerMinute: 6000,
          intervals: FAST_INTERVALS,
          track: { assets: sim.state().trackedAssets, users: sim.state().trackedUsers },
        },
      ],
    });
    const stateFile = `${dir}/state/stacks/${STACK}.json.gz`;
    const args = ['--config', config, '--storage.path', `${dir}/state`, '--web.openmetrics-created'];

    let current: RunningExporter | undefined;
    let processNo = 0;
    const scrapes: Scrape[] = [];
    // The test's own scraper: once a second, in OpenMetrics, whatever process runs now.
    let scraping = true;
    const scraper = (async () => {
      while (scraping) {
        const e = current;
        const no = processNo;
        if (e) {
          try {
            const r = await fetch(`${e.url}/metrics`, { headers: { accept: OPENMETRICS }, signal: AbortSignal.timeout(10_000) });
            if (r.status === 200) scrapes.push({ process: no, counters: countersOf(await r.text()) });
          } catch {
            // the process is down between a stop and the next start
          }
        }
        await sleep(1000);
      }
    })();
    const of = (no: number) => scrapes.filter((s) => s.process === no);
    const requestsIn = (s: Scrape | undefined) => [...(s?.counters ?? [])].filter(([k]) => k.startsWith('cmdb_endpoint_requests{')).reduce((n, [, c]) => n + c.value, 0);

    const target = await startProxy(() => current);
    const promDir = makeTempDir('restart-counters-prometheus');
    dirs.push(promDir);
    const prometheus: RunningPrometheus = await startPrometheus({ dir: promDir, target, ruleFiles: new Map(), interval: '1s', args: ['--enable-feature=created-timestamp-zero-ingestion'] });
    /** Until Prometheus stored a scrape of the process started at `since` (ms) with its counters in it. */
    const scrapedByPrometheus = (since: number) =>
      waitFor(
        'Prometheus: a scrape of the running process with its counters',
        async () => {
          const r = await prometheus.api.query(`timestamp(cmdb_endpoint_requests_total{job="${JOB}"})`);
          const newest = Math.max(0, ...r.map((s) => Number(s.value[1])));
          return newest * 1000 > since ? done(newest) : notYet({ newest, since });
        },
        WAIT,
      );
    /** Until the test has scraped process `no` at least twice and its requests moved (it counted something of its own). */
    const countedBy = (no: number) =>
      waitFor(
        `process ${no}: scraped, and requests counted since its first scrape`,
        async () => {
          const mine = of(no);
          return mine.length >= 2 && requestsIn(mine[mine.length - 1]) > requestsIn(mine[0]) ? done(undefined) : notYet(mine.map(requestsIn));
        },
        WAIT,
      );
    const start = async () => {
      const since = Date.now();
      const e = await startExporter({ args, env: {}, name: `exporter ${processNo + 1}` });
      processNo++;
      current = e;
      return { e, since };
    };

    // Process 1: ready, its state written, then more requests counted than the file was written with
    // (a kill -9 keeps only the file), and Prometheus has scraped it.
    const first = await start();
    await waitUntilReady(first.e);
    await waitFor('the first state write', async () => (existsSync(stateFile) ? done(undefined) : notYet('no state file yet')), WAIT);
    const atWrite = scrapes.length;
    await waitFor(
      'requests counted after the state write',
      async () => {
        const after = scrapes.slice(atWrite).filter((s) => s.process === 1);
        return after.length >= 2 && requestsIn(after[after.length - 1]) > requestsIn(after[0]) ? done(undefined) : notYet(after.map(requestsIn));
      },
      WAIT,
    );
    await scrapedByPrometheus(first.since);
    const beforeKill = of(1).at(-1);
    current = undefined;
    const killedAt = Date.now();
    first.e.proc.killNow();
    expect((await first.e.proc.exited).signal).toBe('SIGKILL');

    // Process 2, after kill -9: scraped by both, counts its own; then SIGTERM.
    const second = await start();
    await countedBy(2);
    await scrapedByPrometheus(second.since);
    const beforeTerm = of(2).at(-1);
    current = undefined;
    const stoppedAt = Date.now();
    expect((await second.e.proc.stop()).killed).toBe(false);

    // Process 3, after SIGTERM.
    const third = await start();
    await countedBy(3);
    const lastAt = await scrapedByPrometheus(third.since);
    scraping = false;
    await scraper;

    const afterKill = across(beforeKill?.counters ?? new Map(), of(2).map((s) => s.counters));
    const afterTerm = across(beforeTerm?.counters ?? new Map(), of(3).map((s) => s.counters));

    // What Prometheus stored over the whole run: a counter series drops only from a sample of the
    // old process to one of the new (no proxy forwards to the old one once the stop begins), and
    // there, with created-timestamp ingestion, to the zero sample at the new start.
    const window = Math.ceil(lastAt - first.since / 1000) + 5;
    const stored = await prometheus.api.rawSamples(`{__name__=~".+_total",job="${JOB}"}[${window}s]`);
    const restarts = [
      { stoppedAt: killedAt, startedAt: second.since },
      { stoppedAt, startedAt: third.since },
    ];
    const drops: string[] = [];
    let toZero = 0;
    let toOther = 0;
    for (const s of stored) {
      for (let i = 1; i < s.values.length; i++) {
        const [[prevAt, prev], [nextAt, next]] = [s.values[i - 1] ?? [0, '0'], s.values[i] ?? [0, '0']];
        if (Number(next) >= Number(prev)) continue;
        if (restarts.some((r) => prevAt * 1000 <= r.stoppedAt && nextAt * 1000 >= r.startedAt)) {
          if (Number(next) === 0) toZero++;
          else toOther++;
        } else drops.push(`${s.metric.__name__}${JSON.stringify(s.metric)}: ${prev} at ${prevAt}, then ${next} at ${nextAt}`);
      }
    }
    const requestsSeries = stored.filter((s) => s.metric.__name__ === 'cmdb_endpoint_requests_total').length;
    // With created-timestamp ingestion the `_created` lines are starts, not series of their own.
    const createdSeries = await prometheus.api.rawSamples(`{__name__=~".+_created",job="${JOB}"}[${window}s]`);
    await third.e.proc.stop();

    const show = (what: string, a: Across) =>
      `${what}: ${a.compared} counter series compared, ${a.newStart} with a new start, ${a.sameStartNotLower} under the same start not lower, ${a.lower.length} lower under the same start, ${a.noStart.length} without a start`;
    console.log(
      `${show('kill -9', afterKill)}\n${show('SIGTERM', afterTerm)}\n` +
        `requests before the kill ${requestsIn(beforeKill)}, at the first scrape after it ${requestsIn(of(2)[0])}; before SIGTERM ${requestsIn(beforeTerm)}, after it ${requestsIn(of(3)[0])}\n` +
        `Prometheus: ${stored.length} counter series stored (${requestsSeries} of cmdb_endpoint_requests_total), drops across a restart: ${toZero} to the zero sample of a new start, ${toOther} to another value; ${drops.length} drops elsewhere; ${createdSeries.length} _created series`,
    );
    for (const a of [afterKill, afterTerm]) {
      expect(a.compared).toBeGreaterThan(20);
      expect(a.noStart).toEqual([]);
      expect(a.lower).toEqual([]);
    }
    expect(drops).toEqual([]);
    expect(toZero).toBeGreaterThan(0);
    expect(createdSeries.map((x) => x.metric.__name__)).toEqual([]);
  }, 600_000);
});
