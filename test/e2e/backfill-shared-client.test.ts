/**
 * The daemon and a backfill with one client id, against a CMDB that keeps one token per client
 * (the simulator's one-token-per-client mode): each token request ends the other process's token.
 *
 * - Without the daemon's folder, each keeps taking the other's tokens: the built backfill says so at
 *   start (and how to avoid it), and rides it out: it completes (exit 0, every family it writes
 *   present) without a word of rejected credentials, and the built daemon, polling all along, does
 *   not call its credentials rejected either.
 * - Given the daemon's --storage.path, there is one token holder: the backfill uses the daemon's
 *   token (0 token requests of its own), fewer than 5 % of the requests are answered 401 and no poll
 *   of the daemon fails; when the tokens expire meanwhile, the backfill waits for the daemon to renew
 *   and still asks for none. The folder stays the daemon's: the backfill writes nothing there, and
 *   the token file is the daemon user's alone (0600). The tokens expire after a number of requests
 *   fewer than the backfill makes, not after a time: an expiry then falls inside the backfill's
 *   work whatever the machine's pace (a 15-s lifetime outlived a backfill that read in less).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKFILLED_FAMILIES } from '../../src/backfill/replay.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { http, makeTempDir, removeDir, REPO_ROOT, requireBuild } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const DAY = 86_400;
const STACK = 'shared';
const BACKFILL_AGENT = 'cmdb-backfill-e2e';
let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let config: string;
/** The same stack for the backfill, with a user agent of its own: its requests told from the daemon's. */
let backfillConfig: string;
let storage: string;

beforeAll(async () => {
  requireBuild();
  dir = makeTempDir('backfill-shared-client');
  sim = await startSimulator({ seed: 5, live: false, oneTokenPerClient: true, connectorPeriodSeconds: DAY, historyDays: 3, size: { runsPerConnector: 4, actions: 4, jobsPerAction: 20 } });
  const state = sim.state();
  const stack = {
    name: STACK,
    baseUrl: sim.url,
    clientId: sim.clientId,
    secret: sim.secret,
    rateLimitPerMinute: 6000,
    actionJobsPerMinute: 6000,
    // Slow enough that the daemon's polls (every 10 s) fall inside the backfill's reading many times.
    backfillRequestsPerMinute: 40,
    intervals: FAST_INTERVALS,
    track: { assets: state.trackedAssets, users: state.trackedUsers },
  };
  config = writeExporterConfig(dir, { logLevel: 'info', stacks: [stack] });
  backfillConfig = writeExporterConfig(dir, { logLevel: 'info', stacks: [{ ...stack, userAgent: BACKFILL_AGENT }] }, 'backfill.yaml');
  storage = join(dir, 'daemon-state');
  exporter = await startExporter({ args: ['--config', config, '--storage.path', storage], env: {} });
  await waitUntilReady(exporter);
}, 180_000);

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

/** Families (names) with a sample in the OpenMetrics files of `out`. */
function familiesIn(out: string): Set<string> {
  const names = new Set<string>();
  for (const f of readdirSync(out).filter((n) => n.endsWith('.om'))) {
    for (const m of readFileSync(join(out, f), 'utf8').matchAll(/^(cmdb_\w+)[{ ]/gm)) names.add(m[1] as string);
  }
  return names;
}

/** The built backfill over 3 days (1-h steps), with its own user agent so that its requests can be told from the daemon's. */
function backfill(out: string, extra: readonly string[] = []) {
  // No promtool on PATH: the OpenMetrics files stay in --out to be read.
  return runToCompletion(process.execPath, ['dist/main.js', 'backfill', '--config', backfillConfig, '--from', '3d', '--step', '1h', '--out', out, '--instance', 'x:1', ...extra], {
    cwd: REPO_ROOT,
    env: { PATH: '' },
    timeoutMs: 170_000,
  });
}

const byBackfill = (q: { headers: Record<string, string> }) => q.headers['user-agent'] === BACKFILL_AGENT;

/** Lines the daemon logged since `from` (its output's line count) about a poll that failed (each failure run logs its first). */
const pollFailures = (from: number) =>
  exporter.proc
    .output()
    .split('\n')
    .slice(from)
    .filter((l) => /"consecutiveFailures":\d+/.test(l));

describe('daemon and backfill with one client id, one token per client', () => {
  it('the backfill completes with every family and says nothing of rejected credentials; the daemon does not call its credentials rejected', async () => {
    const before = sim.requests().length;
    const out = join(dir as string, 'out');
    const r = await backfill(out);
    const said = `exit ${String(r.code)}\n${r.stdout}\n${r.stderr}`;
    const during = sim.requests().slice(before);
    // The two processes did take each other's tokens all along.
    const tokens = during.filter((q) => q.endpoint === 'access_token' && q.status === 200).length;
    const taken = during.filter((q) => q.status === 401).length;
    expect(tokens, said).toBeGreaterThan(4);
    expect(taken, said).toBeGreaterThan(2);

    expect(r.code, said).toBe(0);
    // Said at start: what the daemon loses, and how to avoid it.
    expect(r.stdout).toContain(`token of stack ${STACK}: a daemon polling with the same client id loses its token each time this backfill asks for one`);
    expect(r.stdout).toContain("give this backfill the daemon's --storage.path");
    expect(said).not.toMatch(/credentials|rejected/i);
    expect(r.stdout, said).not.toContain('missing');
    const written = familiesIn(out);
    expect(BACKFILLED_FAMILIES.map((f) => f.name).filter((n) => !written.has(n))).toEqual([]);

    // The daemon kept polling and never took the 401s for rejected credentials.
    const logged = exporter.proc.output();
    expect(logged).not.toMatch(/rejected the credentials|credentials rejected|token rejected/i);
    const page = await http(`${exporter.url}/`);
    expect(page.text).not.toContain('credentials rejected');
  });

  it("given the daemon's --storage.path: one token holder, under 5 % of the requests answered 401, no poll of the daemon failed; expired tokens are renewed by the daemon alone", async () => {
    // From one token holder on: the daemon holding the live token again (the backfill before took
    // the last one; the daemon's next poll meets that 401 and renews), else the backfill starts on
    // a token already ended and both meet that 401 (4 of 46 requests on a run).
    const tokens = join(storage, 'cmdb-exporter.tokens.json');
    await waitFor(
      "the daemon's token file to hold the newest token",
      async () => {
        const newest = sim.issuedTokens().at(-1) as string;
        return readFileSync(tokens, 'utf8').includes(newest) ? done(undefined) : notYet(`${sim.issuedTokens().length} tokens issued, the newest not the daemon's`);
      },
      { intervalMs: 250 },
    );
    const logged = exporter.proc.output().split('\n').length;
    const before = sim.requests().length;
    const out = join(dir as string, 'shared-out');
    const r = await backfill(out, ['--storage.path', storage]);
    const said = `exit ${String(r.code)}\n${r.stdout}\n${r.stderr}`;
    const during = sim.requests().slice(before);
    expect(r.code, said).toBe(0);
    expect(r.stdout).toContain(`token of stack ${STACK}: the daemon's, pid ${String(exporter.proc.pid)} on `);
    expect(r.stdout).toContain(`holding ${storage}; on a 401 this backfill waits for the daemon to renew it, and asks the CMDB for none of its own`);
    const written = familiesIn(out);
    expect(BACKFILLED_FAMILIES.map((f) => f.name).filter((n) => !written.has(n))).toEqual([]);
    expect(during.filter(byBackfill).length, said).toBeGreaterThan(10);
    // The backfill asked for no token: it used the daemon's.
    expect(during.filter((q) => byBackfill(q) && q.endpoint === 'access_token').length, said).toBe(0);
    const refused = during.filter((q) => q.status === 401).length;
    console.log(`one client id, the daemon's folder given: ${refused} of ${during.length} requests answered 401 (${during.filter(byBackfill).length} of them the backfill's), ${during.filter((q) => q.endpoint === 'access_token').length} token requests, backfill exit ${String(r.code)}`);
    expect(refused / during.length).toBeLessThan(0.05);
    expect(pollFailures(logged), 'polls of the daemon that failed during the backfill').toEqual([]);

    // Tokens that expire meanwhile: the daemon meets the 401 at its next poll and renews; the
    // backfill waits for that instead of asking for its own. Each token ends after TOKEN_USES
    // requests, fewer than the backfill makes (the run above made as many as this one makes: the
    // same reading into a new --out), so the backfill meets an expired token, whatever its pace.
    const TOKEN_USES = 10;
    expect(during.filter((q) => byBackfill(q) && q.status === 200).length, said).toBeGreaterThan(TOKEN_USES);
    sim.setTokenExpiry({ afterRequests: TOKEN_USES });
    try {
      const mark = sim.requests().length;
      const again = await backfill(join(dir as string, 'shared-expiring'), ['--storage.path', storage]);
      const expiring = sim.requests().slice(mark);
      const out2 = `exit ${String(again.code)}\n${again.stdout}\n${again.stderr}`;
      console.log(
        `tokens ending after ${TOKEN_USES} requests: ${expiring.filter(byBackfill).length} requests of the backfill (${expiring.filter((q) => byBackfill(q) && q.status === 401).length} answered 401), ${expiring.filter((q) => !byBackfill(q)).length} of the daemon, ${expiring.filter((q) => q.endpoint === 'access_token').length} token requests, backfill exit ${String(again.code)}`,
      );
      expect(again.code, out2).toBe(0);
      expect(expiring.filter((q) => !byBackfill(q) && q.endpoint === 'access_token' && q.status === 200).length, 'tokens the daemon renewed').toBeGreaterThan(0);
      expect(expiring.filter((q) => byBackfill(q) && q.status === 401).length, 'the backfill met the expired tokens').toBeGreaterThan(0);
      expect(expiring.filter((q) => byBackfill(q) && q.endpoint === 'access_token').length, out2).toBe(0);
    } finally {
      sim.setTokenExpiry(undefined);
    }

    // The folder stays the daemon's: the backfill wrote nothing there; the token file is 0600.
    expect(statSync(tokens).mode & 0o777).toBe(0o600);
    expect(readdirSync(storage).filter((n) => n.includes('backfill'))).toEqual([]);
    // A secret: in that one file only, never in the backfill's output or files.
    const current = sim.issuedTokens().at(-1) as string;
    expect(readFileSync(tokens, 'utf8')).toContain(current);
    for (const f of readdirSync(out)) expect(readFileSync(join(out, f), 'utf8').includes(current), f).toBe(false);
    expect(`${r.stdout}${r.stderr}`.includes(current)).toBe(false);
  });
});
