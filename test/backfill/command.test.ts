/**
 * The backfill command in-process against the simulator (a real HTTP server on loopback): the dry
 * run sends nothing, bad flags stop it with exit 2 naming the flag, without promtool the
 * OpenMetrics files are written and the command to run is printed, the state in --out makes the
 * same command run again a no-op and another command on the same --out a refusal, and a stack the
 * CMDB does not let in or does not answer stops at once with what to do.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ANSWERS_FILE } from '../../src/backfill/answers.js';
import { STATE_FILE } from '../../src/backfill/state.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { runCommand as run } from '../helpers/backfill.js';
import { runDaemon } from '../helpers/daemon.js';
import { freePort } from '../e2e/harness/tools.js';

let sim: SimulatorServer;
let dir: string;
let config: string;

beforeAll(async () => {
  sim = await startSimulator({ live: false, connectorPeriodSeconds: 86_400, historyDays: 3, size: { runsPerConnector: 3, connectors: 3, actions: 2, jobsPerAction: 6 } });
  dir = mkdtempSync(join(tmpdir(), 'cmdb-backfill-cmd-'));
  config = join(dir, 'exporter.yaml');
  const state = sim.state();
  writeFileSync(
    config,
    stringify({
      stacks: [
        { name: 'one', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, backfillRequestsPerMinute: 6000, rateLimitPerMinute: 6000, retries: { max: 0 }, track: { assets: state.trackedAssets.slice(0, 1) } },
        { name: 'two', baseUrl: sim.url, token: 'not-used' },
      ],
    }),
  );
});

afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The UTC calendar days the window printed as "stack one: FROM to TO" touches: one metrics_data
 * request each. With the default --to (now-3h) a 3d window touches 4 days, but only 3 between
 * 00:00 and 03:00 UTC, so the count is read from the window the command printed.
 */
function daysInPrintedWindow(stdout: string): number {
  const [from, to] = printedWindow(stdout);
  const day = (ms: number) => Math.floor(ms / 86_400_000);
  return day(to) - day(from) + 1;
}

/** The window printed as "stack one: FROM to TO", in unix ms. */
function printedWindow(stdout: string): [number, number] {
  const m = /stack one: (\S+) to (\S+),/.exec(stdout);
  if (!m) throw new Error(`no window in ${stdout}`);
  return [Date.parse(m[1]!), Date.parse(m[2]!)];
}

const simRequests = async () => ((await (await fetch(`${sim.url}/_admin/requests`)).json()) as Array<{ endpoint: string | null; rawQuery: string }>);

describe('cmdb-exporter backfill', () => {
  it('--dry-run prints the plan per endpoint with the time at the pace, and sends nothing', async () => {
    await fetch(`${sim.url}/_admin/requests`, { method: 'DELETE' });
    const r = await run(['--config', config, '--from', '3d', '--stack', 'one', '--dry-run']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('dry run: nothing is sent');
    const [from, to] = printedWindow(r.stdout);
    expect(to - from).toBe((3 * 24 - 3) * 3_600_000); // --from 3d to the default now-3h
    const days = daysInPrintedWindow(r.stdout);
    expect([3, 4]).toContain(days);
    expect(r.stdout).toMatch(new RegExp(`metrics_data\\s+${days}\\b`));
    expect(r.stdout).toMatch(/asset_change\s+1\b/);
    expect(r.stdout).toMatch(/total\s+\d+\s+known in advance: \S+ at the pace/);
    expect(r.stdout).not.toContain('stack two');
    expect(await simRequests()).toEqual([]);
  });

  it.each([
    [['--from', '1d', '--to', '2d'], '--from: '],
    [['--from', '2099-01-01'], '--from: '],
    [['--from', '1d', '--to', '2099-01-01'], '--to: '],
    [['--from', '1d', '--step', '0.5s'], '--step: '],
    [['--from', '1d', '--stack', 'nope'], '--stack: no stack named "nope"'],
    [['--from', '1d', '--promtool', '/nonexistent/promtool'], '--promtool: '],
    [['--from', '1d', '--frm', 'x'], 'Unknown option'],
    [['--from', '1d', '--config.file', '/elsewhere.yaml'], '--config and --config.file are the same option'],
    [['--from', '1d', '--fill-gaps'], '--fill-gaps: needs --prometheus.url'],
    [['--from', '1d', '--remote-write.basic-auth.username', 'u'], '--remote-write.basic-auth.username: only with --remote-write.url'],
    [['--from', '1d', '--remote-write.url', 'ftp://x/api/v1/write'], '--remote-write.url: must be http:// or https://'],
    [['--from', '1d', '--remote-write.url', 'http://127.0.0.1:9/api/v1/write', '--remote-write.header', 'Authorization: Bearer x'], '--remote-write.header: Authorization is set by the protocol'],
    [['--from', '1d', '--remote-write.url', 'http://127.0.0.1:9/api/v1/write', '--remote-write.max-samples-per-send', '0'], '--remote-write.max-samples-per-send: '],
    [['--from', '1d', '--remote-write.url', 'http://127.0.0.1:9/api/v1/write', '--remote-write.bearer-token-file', '/nonexistent/token'], '--remote-write.bearer-token-file: cannot read /nonexistent/token'],
    [['--from', '1d', '--remote-write.url', 'http://127.0.0.1:9/api/v1/write', '--remote-write.retry-for', 'soon'], '--remote-write.retry-for: a duration of at least 1s'],
    [['--from', '1d', '--web.external-url', 'cmdb-exporter:9873'], '--web.external-url: must be an absolute http(s) URL'],
  ])('refuses %j with exit 2 and a message naming the flag', async (args, message) => {
    const r = await run(['--config', config, '--out', join(dir, 'never'), ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stdout).toBe('');
  });

  it('a remote-write target that cannot be reached for --remote-write.retry-for is a failure to write (exit 1), not a bad flag (exit 2)', async () => {
    const r = await run(['--config', config, '--out', join(dir, 'unreachable'), '--from', '1d', '--remote-write.url', 'http://127.0.0.1:9/api/v1/write', '--remote-write.retry-for', '1s']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--remote-write.url: http:\/\/127.0.0.1:9\/api\/v1\/write did not take the request within 1s \(--remote-write.retry-for; \d+ attempts\): .*ECONNREFUSED/);
    expect(r.stderr).toContain('remote write: POST /api/v1/write: connect ECONNREFUSED');
    expect(r.stdout).toContain('nothing was read or written.');
  });

  it('--help describes the flags it shares with the daemon in the very words of the daemon\'s --help', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    const daemon = runDaemon(['--help'], {});
    expect(await daemon.exited).toBe(0);
    /** The help lines of a flag: its own and the indented ones after it. */
    const entry = (help: string, flag: string) => {
      const lines = help.split('\n');
      const i = lines.findIndex((l) => l.startsWith(`  ${flag} `));
      const end = lines.findIndex((l, j) => j > i && !/^ {10,}\S/.test(l));
      return i < 0 ? '' : lines.slice(i, end).join('\n');
    };
    for (const flag of ['--config', '--log.format']) {
      expect(entry(r.stdout, flag), flag).not.toBe('');
      expect(entry(r.stdout, flag), flag).toBe(entry(daemon.stdout(), flag));
    }
  });

  it('an endpoint that fails is logged once, has no samples, and the summary names its days (exit 1)', async () => {
    sim.addFault({ endpoint: 'metrics_data', status: 500 });
    try {
      const out = join(dir, 'partial');
      const r = await run(['--config', config, '--from', '3d', '--stack', 'one', '--out', out]);
      expect(r.code).toBe(1);
      const errors = r.stderr.split('\n').filter((l) => l.includes('"level":"error"'));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain('"endpoint":"metrics_data"');
      const days = daysInPrintedWindow(r.stdout);
      expect(r.stdout).toMatch(new RegExp(`missing .*\\n  stack one: counts \\(cmdb_assets, cmdb_users\\) of \\d{4}-\\d\\d-\\d\\d to \\d{4}-\\d\\d-\\d\\d \\(${days} days\\): GET /CMDB/v2/system/metrics/data: 500`));
      expect(r.stdout).toContain(`to read what is missing: cmdb-exporter backfill --config ${config} --from 3d --stack one --out ${out}`);
      const text = readdirSync(out).filter((f) => f.endsWith('.om')).map((f) => readFileSync(join(out, f), 'utf8')).join('');
      expect(text).toContain('cmdb_connector_info{');
      expect(text).not.toContain('cmdb_assets{');
      // What is missing stays known in --out: the answers are kept for the run that reads it.
      expect(existsSync(join(out, ANSWERS_FILE))).toBe(true);
    } finally {
      await fetch(`${sim.url}/_admin/faults`, { method: 'DELETE' });
    }
  });

  it('the same command again after a complete run asks nothing and writes nothing; another command on the same --out is refused', async () => {
    const out = join(dir, 'again');
    const args = ['--config', config, '--from', '2d', '--stack', 'one', '--out', out];
    const first = await run(args);
    expect(first.code).toBe(0);
    expect(existsSync(join(out, STATE_FILE))).toBe(true);
    // Complete: the answers are no longer needed.
    expect(existsSync(join(out, ANSWERS_FILE))).toBe(false);
    const files = readdirSync(out).sort();
    await fetch(`${sim.url}/_admin/requests`, { method: 'DELETE' });
    const second = await run(args);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain('this backfill is complete');
    expect(await simRequests()).toEqual([]);
    expect(readdirSync(out).sort()).toEqual(files);
    const other = await run(['--config', config, '--from', '1d', '--stack', 'one', '--out', out]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('holds another backfill (--from: "2d" then, "1d" now)');
    expect(await simRequests()).toEqual([]);
  });

  it('rejected credentials stop the stack at the first answer, with a credentials hint, and nothing is written', async () => {
    const bad = join(dir, 'bad-secret.yaml');
    writeFileSync(bad, stringify({ stacks: [{ name: 'bad', baseUrl: sim.url, clientId: sim.clientId, secret: 'wrong-secret', backfillRequestsPerMinute: 6000, retries: { max: 0 } }] }));
    await fetch(`${sim.url}/_admin/requests`, { method: 'DELETE' });
    const r = await run(['--config', bad, '--from', '3d', '--out', join(dir, 'bad')]);
    expect(r.code).toBe(1);
    const sent = await simRequests();
    // The token request (in both spellings of the client id key at most), nothing after it.
    expect(sent.every((q) => q.endpoint === 'access_token')).toBe(true);
    expect(sent.length).toBeLessThanOrEqual(2);
    expect(r.stdout).toContain('stack bad: reading stopped early: credentials rejected');
    expect(r.stdout).toContain('Check the credentials of stack bad');
    expect(r.stdout).toContain('nothing was written');
    expect(r.stdout).not.toContain('next:');
    expect(r.stderr).not.toContain('wrong-secret');
  });

  it('a CMDB that cannot be reached stops the stack after a few attempts, not one per unit', async () => {
    const port = await freePort();
    const gone = join(dir, 'gone.yaml');
    writeFileSync(gone, stringify({ stacks: [{ name: 'gone', baseUrl: `http://127.0.0.1:${port}`, token: 't', backfillRequestsPerMinute: 6000, retries: { max: 0 }, track: { assets: ['a', 'b'] } }] }));
    const r = await run(['--config', gone, '--from', '10d', '--out', join(dir, 'gone')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('stack gone: reading stopped early: 3 requests could not reach the CMDB in a row');
    expect(r.stdout).toMatch(/stack gone: counts \(cmdb_assets, cmdb_users\) of \S+ to \S+ \(\d+ days\): not read: 3 requests could not reach/);
    expect(r.stdout).toContain('nothing was written');
  });

  it('a token endpoint that keeps failing (the road pauses the stack for it) stops the stack after three, not one unit per endpoint', async () => {
    const broken = join(dir, 'token-503.yaml');
    writeFileSync(broken, stringify({ stacks: [{ name: 'broken', baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, backfillRequestsPerMinute: 6000, retries: { max: 0, minDelaySeconds: 0.1, maxDelaySeconds: 0.2 } }] }));
    await fetch(`${sim.url}/_admin/requests`, { method: 'DELETE' });
    sim.addFault({ endpoint: 'access_token', status: 503 });
    try {
      const r = await run(['--config', broken, '--from', '10d', '--out', join(dir, 'token-503')]);
      expect(r.code).toBe(1);
      const sent = await simRequests();
      expect(sent.every((q) => q.endpoint === 'access_token')).toBe(true);
      expect(sent).toHaveLength(3);
      expect(r.stdout).toContain('stack broken: reading stopped early: 3 token requests failed in a row');
      expect(r.stdout).toContain('and its token endpoint is reachable');
      expect(r.stdout).toContain('nothing was written');
    } finally {
      sim.clearFaults();
    }
  });

  it('without promtool writes the OpenMetrics files into --out and prints the command to run', async () => {
    const out = join(dir, 'om');
    const r = await run(['--config', config, '--from', '2d', '--stack', 'one', '--out', out]);
    expect(r.stderr).not.toMatch(/"level":"(error|fatal)"/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('promtool not found');
    expect(r.stdout).toContain(`promtool tsdb create-blocks-from openmetrics --max-block-duration=6h "$f" ${out}`);
    const files = readdirSync(out).filter((f) => f.endsWith('.om'));
    expect(files.length).toBeGreaterThanOrEqual(2);
    for (const f of files) {
      const text = readFileSync(join(out, f), 'utf8');
      expect(text.endsWith('# EOF\n')).toBe(true);
      expect(text).toMatch(/^# HELP cmdb_/);
      // Timestamps in seconds; the job label as Prometheus would add it.
      expect(text).toMatch(/^cmdb_assets\{stack="one",instance="[^"]+",job="cmdb-exporter"\} \d+ \d{10}$/m);
    }
    // Plain progress lines, no terminal control codes, when stderr is not a terminal.
    expect(r.stderr).toMatch(/^writing \[#+\] 100% /m);
    expect(r.stderr).not.toContain('\x1b[');
  });
});
