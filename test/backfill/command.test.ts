/**
 * The backfill command in-process against the simulator (a real HTTP server on loopback): the dry
 * run sends nothing, bad flags stop it with exit 2 naming the flag, and without promtool the
 * OpenMetrics files are written and the command to run is printed.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runBackfill } from '../../src/backfill/command.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { runDaemon } from '../helpers/daemon.js';

class Sink extends Writable {
  text = '';
  constructor(readonly isTTY = false) {
    super();
  }
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

let sim: SimulatorServer;
let dir: string;
let config: string;

beforeAll(async () => {
  sim = await startSimulator({ live: false, connectorPeriodSeconds: 86_400, historyDays: 3, size: { runsPerConnector: 3, connectors: 3, actions: 2, jobsPerAction: 6 } });
  dir = mkdtempSync(join(tmpdir(), 'backfill-cmd-'));
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

async function run(args: string[], env: NodeJS.ProcessEnv = { PATH: '' }) {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await runBackfill(args, { stdout, stderr, env, now: Date.now });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

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
    const requests = (await (await fetch(`${sim.url}/_admin/requests`)).json()) as unknown[];
    expect(requests).toEqual([]);
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
  ])('refuses %j with exit 2 and a message naming the flag', async (args, message) => {
    const r = await run(['--config', config, '--out', join(dir, 'never'), ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stdout).toBe('');
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
      expect(entry(r.stdout, flag), flag).toBe(entry(daemon.output(), flag));
    }
  });

  it('an endpoint that fails is logged once, left out and named; the rest is written (exit 1)', async () => {
    sim.addFault({ endpoint: 'metrics_data', status: 500 });
    try {
      const out = join(dir, 'partial');
      const r = await run(['--config', config, '--from', '3d', '--stack', 'one', '--out', out]);
      expect(r.code).toBe(1);
      const errors = r.stderr.split('\n').filter((l) => l.includes('"level":"error"'));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain('"endpoint":"metrics_data"');
      expect(r.stdout).toContain(`left out, since their history could not be read: one/metrics_data (${daysInPrintedWindow(r.stdout)} failed)`);
      const text = readdirSync(out).map((f) => readFileSync(join(out, f), 'utf8')).join('');
      expect(text).toContain('cmdb_connector_info{');
      expect(text).not.toContain('cmdb_assets{');
    } finally {
      await fetch(`${sim.url}/_admin/faults`, { method: 'DELETE' });
    }
  });

  it('without promtool writes the OpenMetrics files into --out and prints the command to run', async () => {
    const out = join(dir, 'om');
    const r = await run(['--config', config, '--from', '2d', '--stack', 'one', '--out', out]);
    expect(r.stderr).not.toMatch(/"level":"(error|fatal)"/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('promtool not found');
    expect(r.stdout).toContain(`promtool tsdb create-blocks-from openmetrics --max-block-duration=18h "$f" ${out}`);
    const files = readdirSync(out);
    expect(files.length).toBeGreaterThanOrEqual(2);
    for (const f of files) {
      const text = readFileSync(join(out, f), 'utf8');
      expect(text.endsWith('# EOF\n')).toBe(true);
      expect(text).toMatch(/^# HELP cmdb_/);
      // Timestamps in seconds; the job label as Prometheus would add it.
      expect(text).toMatch(/^cmdb_assets\{stack="one",job="cmdb-exporter"\} \d+ \d{10}$/m);
    }
    // Plain progress lines, no terminal control codes, when stderr is not a terminal.
    expect(r.stderr).toMatch(/^writing \[#+\] 100% /m);
    expect(r.stderr).not.toContain('\x1b[');
  });
});
