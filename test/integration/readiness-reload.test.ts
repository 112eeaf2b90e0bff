/**
 * Readiness after start is about the stacks the process started with (issue 25 #5). The daemon as a
 * child process against the simulator; a stack that cannot be reached (a server that accepts
 * connections and never answers) is added by a reload of the file and by a new file in stacksDir.
 * /readyz must never answer 503 while its first polls run out of time: before, it did for one
 * attempt timeout (timeoutSeconds), and behind a Service every stack's scrapes stopped meanwhile.
 * The new stack is shown as joining on /readyz and the status page until its first polls end.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { freePort, runDaemon, type Daemon } from '../helpers/daemon.js';
import { notYet, waitFor } from '../helpers/wait.js';

const SECRET = 'it-ready-secret-4Qd9';
let sim: SimulatorServer;
let hung: Server;
const sockets: Socket[] = [];
let hungUrl: string;
let dir: string;
let daemon: Daemon | undefined;
let base: string;

interface ReadyBody {
  status: string;
  pending?: Array<{ stack: string; endpoint: string }>;
  joining?: Array<{ stack: string; endpoint: string }>;
}

/** A stack at the server that never answers: each first poll ends at its 10 s attempt timeout. */
function unreachable(name: string, indent: string): string {
  return [
    `${indent}name: ${name}`,
    `${indent}baseUrl: ${hungUrl}`,
    `${indent}token: tok-${name}-never-answered`,
    `${indent}timeoutSeconds: 10`,
    `${indent}connectTimeoutSeconds: 2`,
    `${indent}retries: { max: 0 }`,
  ].join('\n');
}

function writeMain(extraStacks = ''): void {
  const state = sim.state();
  writeFileSync(
    join(dir, 'exporter.yaml'),
    [
      'enableReload: true',
      'stacksDir: stacks.d',
      'defaults: { rateLimitPerMinute: 6000, actionJobsPerMinute: 6000 }',
      'stacks:',
      '  - name: one',
      `    baseUrl: ${sim.url}`,
      `    clientId: ${sim.clientId}`,
      '    secret: ${IT_SECRET}',
      `    track: { assets: ${JSON.stringify(state.trackedAssets)} }`,
      extraStacks,
    ].join('\n'),
  );
}

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, secret: SECRET });
  hung = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
  hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'cmdb-readiness-'));
  mkdirSync(join(dir, 'stacks.d'));
  writeMain();
  const port = await freePort();
  daemon = runDaemon(['--config', join(dir, 'exporter.yaml'), '--web.listen-address', `127.0.0.1:${port}`], { IT_SECRET: SECRET, LOG_LEVEL: 'info' });
  base = `http://127.0.0.1:${port}`;
  await waitFor('/readyz 200 at start', async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), { timeoutMs: 30_000 });
});

afterAll(async () => {
  await daemon?.stop('SIGKILL');
  sockets.forEach((s) => s.destroy());
  await new Promise((resolve) => hung?.close(resolve));
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Whether the daemon logged, after `from` characters of its output, the first failed poll of the stack's license. */
function licenseFailed(stack: string, from: number): boolean {
  return (daemon?.output().slice(from) ?? '').split('\n').some((line) => {
    if (!line.startsWith('{')) return false;
    const entry = JSON.parse(line) as { stack?: string; endpoint?: string; outcome?: string };
    return entry.stack === stack && entry.endpoint === 'license' && entry.outcome !== undefined;
  });
}

/**
 * /readyz from the reload until the new stack's license poll has failed (its 10 s attempt timeout:
 * the time the process was unready before), bounded against a hang: every answer's status, whether
 * the stack was seen joining, and the status page while it was.
 */
async function watchReadiness(stack: string, logFrom: number): Promise<{ statuses: number[]; sawJoining: boolean; page: string }> {
  const statuses: number[] = [];
  let sawJoining = false;
  let page = '';
  await waitFor(
    `a failed license poll of ${stack} logged (or an answer other than 200)`,
    async () => {
      // Read before asking, so the answer after the failure is counted too.
      const failed = licenseFailed(stack, logFrom);
      const res = await fetch(`${base}/readyz`);
      const body = (await res.json()) as ReadyBody;
      statuses.push(res.status);
      const joining = (body.joining ?? []).some((j) => j.stack === stack);
      if (joining && !sawJoining) page = await (await fetch(`${base}/`)).text();
      sawJoining ||= joining;
      // Before the fix the first answer is already a 503: no need to wait out the attempt timeout.
      return res.status !== 200 || failed || notYet(body);
    },
    { intervalMs: 200, gone: daemon?.gone },
  );
  return { statuses, sawJoining, page };
}

describe('a stack that cannot be reached, added after start', () => {
  it('by a reload of the file: /readyz stays 200 while its first polls time out, listing it as joining', async () => {
    writeMain(unreachable('late', '    ').replace(/^ {4}name/, '  - name'));
    const logged = daemon?.output().length ?? 0;
    const reload = await fetch(`${base}/-/reload`, { method: 'POST' });
    expect(await reload.text()).toContain('"added":1');
    const seen = await watchReadiness('late', logged);
    expect(seen.statuses.filter((s) => s !== 200)).toEqual([]);
    expect(seen.sawJoining).toBe(true);
    // Polled a few times a second over its 10 s attempt timeout.
    expect(seen.statuses.length).toBeGreaterThan(3);
    expect(seen.page).toContain('Added by a reload and pending their first polls (not holding readiness back): <code>late</code>');
    // Its polls fail and say so; the stack the process started with is served as before.
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('cmdb_endpoint_up{stack="late",endpoint="license"} 0');
    expect(metrics).toContain('cmdb_endpoint_up{stack="one",endpoint="license"} 1');
  }, 90_000);

  it('by a new file in stacksDir (SIGHUP): the same', async () => {
    writeFileSync(join(dir, 'stacks.d', 'later.yaml'), unreachable('later', ''));
    const logged = daemon?.output().length ?? 0;
    daemon?.child.kill('SIGHUP');
    await waitFor('the reload', async () => (daemon?.output().slice(logged).includes('configuration reloaded') ? true : undefined), { timeoutMs: 20_000 });
    const seen = await watchReadiness('later', logged);
    expect(seen.statuses.filter((s) => s !== 200)).toEqual([]);
    expect(seen.sawJoining).toBe(true);
    expect(seen.page).toContain('<code>later</code>');
  }, 90_000);
});
