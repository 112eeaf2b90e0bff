/**
 * A backfill stopped by SIGHUP (a closed terminal) while reading, then by SIGTERM while writing,
 * then run to its end with the same command, into a real VictoriaMetrics over remote write
 * (through a proxy that decodes every request it passes on and can hold the writes in flight):
 *
 * - no request the first runs had an answer to is sent again (the simulator's request log), the
 *   one in flight at the stop aside; the last run asks the CMDB nothing at all;
 * - no sample reaches the target twice (the proxy counts every series and timestamp);
 * - the result is complete: the same samples as one uninterrupted run of the same backfill;
 * - each stop says what was read and written, and how to continue: the command it prints, run as
 *   printed through a shell from the same directory, is the run that completes it.
 *
 * And a connector history scan stopped partway (the simulator serving it as slowly per row as the
 * real service, in pages of 10 rows), first by SIGTERM, then by kill -9, each while a page is in
 * flight, then run to its end: each run goes on from the page after those the earlier runs kept,
 * so that the only pages asked twice are the two in flight at the stops, nothing is written twice,
 * and the samples are those of an uninterrupted run.
 */
import { realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { onPath } from '../../src/executables.js';
import { pageQuery } from '../../src/cmdb/readers/pages.js';
import type { RequestRecord } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { startProcess, stopAllAndCheck, type ManagedProcess } from './harness/processes.js';
import { baseEnv, makeTempDir, removeDir, REPO_ROOT, requireBuild } from './harness/tools.js';
import { startVictoria } from './harness/victoria.js';
import { done, notYet, waitFor } from '../helpers/wait.js';
import { WriteProxy } from './harness/write-proxy.js';

const DAY = 86_400;
// Absolute, so that the reference run covers the very same range as the stopped one.
const NOW = Math.floor(Date.now() / 1000);
const FROM = String(NOW - 4 * DAY);
const TO = String(NOW - 3 * 3600);
let dir: string | undefined;
let sim: SimulatorServer;
let proxy: WriteProxy;
let config: string;

beforeAll(async () => {
  requireBuild();
  dir = makeTempDir('backfill-resume');
  sim = await startSimulator({ seed: 7, live: false, connectorPeriodSeconds: DAY, historyDays: 4, size: { runsPerConnector: 5, jobsPerAction: 12, actions: 8 } });
  const victoria = await startVictoria(dir);
  proxy = new WriteProxy(victoria.url);
  await proxy.start();
  const state = sim.state();
  config = join(dir, 'exporter.yaml');
  writeFileSync(
    config,
    stringify({
      stacks: [{ name: 'resume', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, rateLimitPerMinute: 6000, backfillRequestsPerMinute: 6000, track: { assets: state.trackedAssets, users: state.trackedUsers } }],
    }),
  );
}, 60_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await proxy?.close();
    await sim?.close();
    removeDir(dir);
  });
});

function backfill(out: string, job = 'cmdb-exporter', configFile = config): ManagedProcess {
  const args = ['dist/main.js', 'backfill', '--config', configFile, '--from', FROM, '--to', TO, '--out', out, '--job', job, '--instance', 'exporter:9873', '--remote-write.url', `${proxy.url}/api/v1/write`, '--remote-write.max-samples-per-send', '2000'];
  return startProcess(`backfill ${job}`, process.execPath, args, { cwd: REPO_ROOT, env: baseEnv() });
}

/** The node PATH finds, its real path (what the command compares with the one that ran it). */
const which = (name: string) => {
  const found = onPath(name);
  return found === undefined ? undefined : realpathSync(found);
};

const requestId = (r: RequestRecord) => `${r.method} ${r.rawPath}?${r.rawQuery}`;
const cmdbRequests = (from: number) => sim.requests().slice(from).filter((r) => r.endpoint !== 'access_token');

/** Samples the proxy passed on under `job`, the job label masked: two runs under two jobs compare equal when they wrote the same. */
const samplesOf = (job: string) =>
  [...proxy.samples.keys()]
    .filter((k) => k.includes(`job=${job},`) || k.endsWith(`job=${job}`))
    .map((k) => k.replace(`job=${job}`, 'job=*'))
    .sort();

describe('a backfill stopped while reading and while writing, then run again', () => {
  it('repeats no request and no sample, and ends complete', async () => {
    const out = join(dir as string, 'stopped');
    // 1. Stopped while reading: the first change-history request (read after the days, the
    // connector history and every Action's jobs) is held by the CMDB until the stop.
    sim.addFault({ endpoint: 'user_change', latencyMs: 600_000, times: 1 });
    const first = backfill(out);
    const inFlight = await waitFor(
      'the held change-history request',
      async () => {
        const held = sim.requests().find((r) => r.endpoint === 'user_change' && r.status === 0);
        return held ? done(held) : notYet(`${sim.requests().length} requests`);
      },
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    // A hang-up (a closed terminal, a dropped ssh session) stops it as cleanly as SIGTERM does.
    first.signal('SIGHUP');
    const firstExit = await first.exited;
    expect(firstExit.code, first.tail()).toBe(130);
    const firstOut = first.lines('stdout').join('\n');
    expect(first.lines('stderr').join('\n')).toContain('SIGHUP: stopping cleanly');
    expect(firstOut).toMatch(/stopped \(SIGHUP\) while reading: \d+ answers read by this run and 0 before are kept in /);
    expect(firstOut).toContain('nothing was written by this run');
    // Runnable as printed from where it was run: the program as it was started (node, or the node that ran it, and dist/main.js).
    const command = `dist/main.js backfill --config ${config} --from ${FROM} --to ${TO} --out ${out}`;
    const [node, rest] = /^to continue: (\S+) (.*)$/m.exec(firstOut)?.slice(1) ?? [];
    expect(node).toBe(realpathSync(process.execPath) === which('node') ? 'node' : process.execPath);
    expect(rest?.startsWith(command), rest).toBe(true);
    const afterFirst = sim.requests().length;
    const answeredFirst = new Set(cmdbRequests(0).filter((r) => r.status === 200).map(requestId));
    expect(answeredFirst.size).toBeGreaterThan(10);

    // 2. Stopped while writing: the target holds every write after the third until the stop.
    proxy.holdAfter(3);
    const second = backfill(out);
    await Promise.race([proxy.waitHeld(), second.exited.then(() => Promise.reject(new Error(`backfill ended before a write was held\n${second.tail()}`)))]);
    const stopping = second.stop(120_000);
    // The batches in flight are answered after the signal: the stop waits for them and keeps them.
    await waitFor('the signal to be handled', async () => (second.lines('stderr').some((l) => l.includes('SIGTERM: stopping cleanly')) ? done(undefined) : notYet(second.tail(5))), { timeoutMs: 30_000, intervalMs: 100 });
    proxy.release();
    const secondExit = await stopping;
    expect([secondExit.code, secondExit.killed], second.tail()).toEqual([130, false]);
    const secondOut = second.lines('stdout').join('\n');
    expect(secondOut).toContain('stopped (SIGTERM) while writing');
    const printed = /^to continue: (.*)$/m.exec(secondOut)?.[1] ?? '';
    expect(printed).toBe(`${node} ${rest}`);
    const secondRequests = cmdbRequests(afterFirst);
    const afterSecond = sim.requests().length;
    // Only what the first run had no answer to: the held request, and what came after it.
    expect(secondRequests.filter((r) => answeredFirst.has(requestId(r))).map(requestId)).toEqual([]);
    expect(secondRequests.map(requestId)).toContain(requestId(inFlight));

    // 3. The command printed, as printed, through a shell in the same directory: to its end, nothing left to ask the CMDB.
    const third = startProcess('backfill as printed', '/bin/sh', ['-c', printed], { cwd: REPO_ROOT, env: baseEnv() });
    const thirdExit = await third.exited;
    expect(thirdExit.code, third.tail()).toBe(0);
    expect(third.lines('stdout').join('\n')).toMatch(/continuing the backfill in .*: \d+ answers read and \d+ windows written before/);
    expect(cmdbRequests(afterSecond)).toEqual([]);
    expect(proxy.duplicates()).toEqual([]);

    // 4. The same backfill uninterrupted, under another job label: the same samples.
    const reference = backfill(join(dir as string, 'reference'), 'reference');
    expect((await reference.exited).code, reference.tail()).toBe(0);
    expect(proxy.duplicates()).toEqual([]);
    const resumed = samplesOf('cmdb-exporter');
    expect(resumed.length).toBeGreaterThan(10_000);
    expect(resumed).toEqual(samplesOf('reference'));
  });
});

/** Rows of a connector page here: 115 runs in 12 pages, so that a stop lands in the middle of the scan. */
const PAGE = 10;
/** The simulator serves a page of 10 rows in 0.2 s, as slowly per row as the real service (23 ms a row). */
const MS_PER_ROW = 20;

describe('a connector history scan stopped partway, by SIGTERM and then by kill -9, then run again', () => {
  it('asks no page twice but the one in flight at each stop, writes no sample twice, and ends with the samples of an uninterrupted run', async () => {
    const pagesConfig = join(dir as string, 'pages.yaml');
    const state = sim.state();
    writeFileSync(
      pagesConfig,
      stringify({
        stacks: [
          {
            name: 'resume',
            baseUrl: sim.url,
            clientId: sim.clientId,
            secret: sim.secret,
            rateLimitPerMinute: 6000,
            backfillRequestsPerMinute: 6000,
            paging: { connectorPageSize: PAGE },
            track: { assets: state.trackedAssets, users: state.trackedUsers },
          },
        ],
      }),
    );
    const wholeScan = Math.ceil(state.counts.connectorRuns / PAGE);
    const connectorPages = (from: number) =>
      sim
        .requests()
        .slice(from)
        .filter((r) => r.endpoint === 'connector')
        .map((r) => Number(new URLSearchParams(r.rawQuery).get('page')));
    /**
     * Page `page` of the scan is held by the CMDB (the first time it is asked) until the run is
     * stopped: waits for its request, the pages before it answered and kept.
     */
    const stopAt = async (run: ManagedProcess, page: number) => {
      const query = pageQuery(page, PAGE, '_time,desc');
      sim.addFault({ endpoint: 'connector', query, latencyMs: 600_000, times: 1 });
      await waitFor(
        `${run.name} to ask page ${page}`,
        async () => {
          if (run.hasExited) throw new Error(`${run.name} ended first\n${run.tail()}`);
          return sim.requests().some((r) => r.endpoint === 'connector' && r.rawQuery === query && r.status === 0) ? done(undefined) : notYet(connectorPages(0));
        },
        { timeoutMs: 120_000, intervalMs: 50 },
      );
    };
    const out = join(dir as string, 'pages');
    sim.setConnectorPace({ msPerRow: MS_PER_ROW });
    try {
      // 1. SIGTERM while page 3 is in flight: pages 0 to 2 answered and kept.
      let from = sim.requests().length;
      const first = backfill(out, 'pages', pagesConfig);
      await stopAt(first, 3);
      const firstExit = await first.stop(60_000);
      expect([firstExit.code, firstExit.killed], first.tail()).toEqual([130, false]);
      expect(first.lines('stdout').join('\n')).toMatch(/stopped \(SIGTERM\) while reading: .*, with the 3 pages of the connector history read so far: the next run goes on after them;/);
      const firstPages = connectorPages(from);

      // 2. kill -9 while page 6 is in flight: pages 3 to 5 answered and kept, each flushed to the disk as it came.
      from = sim.requests().length;
      const second = backfill(out, 'pages', pagesConfig);
      await stopAt(second, 6);
      second.killNow();
      expect((await second.exited).signal).toBe('SIGKILL');
      const secondPages = connectorPages(from);

      // 3. The same command to its end.
      from = sim.requests().length;
      const third = backfill(out, 'pages', pagesConfig);
      const thirdExit = await third.exited;
      expect(thirdExit.code, third.tail()).toBe(0);
      const thirdPages = connectorPages(from);
      expect(third.lines('stdout').join('\n')).toMatch(/continuing the backfill in .*: \d+ answers read and 0 windows written before, with the 6 pages of the connector history read so far: its scan goes on after them/);
      console.log(`connector pages asked (${wholeScan} in a whole scan): SIGTERM'd run ${firstPages.join(',')} | kill -9'd run ${secondPages.join(',')} | last run ${thirdPages.join(',')}`);

      // Each run after a stop asks from the page in flight at the stop on: twice only that page.
      const pages = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
      expect(firstPages).toEqual(pages(0, 4));
      expect(secondPages).toEqual(pages(3, 7));
      expect(thirdPages).toEqual(pages(6, wholeScan));
      expect(proxy.duplicates()).toEqual([]);
    } finally {
      sim.clearFaults();
      sim.setConnectorPace({});
    }

    // 4. The same backfill uninterrupted, under another job label: the same samples.
    const reference = backfill(join(dir as string, 'pages-reference'), 'pages-reference', pagesConfig);
    expect((await reference.exited).code, reference.tail()).toBe(0);
    expect(proxy.duplicates()).toEqual([]);
    const resumed = samplesOf('pages');
    expect(resumed.length).toBeGreaterThan(10_000);
    expect(resumed).toEqual(samplesOf('pages-reference'));
  });
});
