/**
 * The one way a test starts the exporter, `startExporter`:
 * - `startExporter(config, opts)`: in this process (src/app.ts `start()`), its log lines captured;
 *   by default with no HTTP server and no scheduler;
 * - `startExporter({ args, env })`: as users and the container run it, a child process (`node
 *   dist/main.js`, or src/main.ts through tsx with `from: 'source'`) listening on a loopback port it
 *   picks itself (port 0) and reports in its "listening on" log line, where it is read from (no race
 *   for a free port).
 * With the configuration helpers of both (stackFor, configFor; writeExporterConfig, FAST_INTERVALS)
 * and waitUntilReady for a child's first polls.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { stringify } from 'yaml';
import { start, type App, type StartOptions } from '../../src/app.js';
import type { ExporterConfig, StackConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/logger.js';
import { SecretScrubber } from '../../src/secrets.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { startProcess, type ManagedProcess } from '../e2e/harness/processes.js';
import { baseEnv, http, REPO_ROOT, requireBuild } from '../e2e/harness/tools.js';
import { testStack } from './stack.js';
import { notYet, StopWaiting, waitFor, WAIT_MS } from './wait.js';

/** A stack pointed at a running simulator, tracking the names it keeps change logs for. */
export function stackFor(sim: SimulatorServer, overrides: Partial<StackConfig> = {}): StackConfig {
  const state = sim.state();
  return testStack({
    name: 'sim',
    baseUrl: sim.url,
    auth: { kind: 'client', clientId: sim.clientId, secret: sim.secret, clientIdKey: 'clientID' },
    track: { assets: state.trackedAssets, users: state.trackedUsers },
    ...overrides,
  });
}

export function configFor(stacks: StackConfig[], overrides: Partial<ExporterConfig> = {}): ExporterConfig {
  return { listenAddress: '127.0.0.1:0', logLevel: 'silent', logFormat: 'json', enableReload: false, stacks, ...overrides };
}

/** The exporter in this process. */
export interface InProcessExporter {
  readonly app: App;
  /** Its log lines so far (JSON, one a line). */
  logText(): string;
}

/** The exporter as a child process. */
export interface RunningExporter {
  readonly proc: ManagedProcess;
  /** http://127.0.0.1:<port> (https:// when serving TLS) */
  readonly url: string;
  readonly port: number;
}

export interface ExporterLaunch {
  /** Command and arguments; default `node dist/main.js` (`from: 'source'`: src/main.ts through tsx). */
  readonly argv?: readonly string[];
  readonly from?: 'dist' | 'source';
  readonly args?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly name?: string;
}

/** Finds the JSON log line `{"msg":"listening on …","url":…}` and returns its url. */
export function listeningUrl(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const entry = JSON.parse(line) as { msg?: unknown; url?: unknown };
    if (typeof entry.msg === 'string' && entry.msg.startsWith('listening on') && typeof entry.url === 'string') return entry.url;
  } catch {
    // not a JSON log line
  }
  return undefined;
}

export function startExporter(config: ExporterConfig, opts?: Partial<StartOptions>): Promise<InProcessExporter>;
export function startExporter(launch: ExporterLaunch): Promise<RunningExporter>;
export function startExporter(what: ExporterConfig | ExporterLaunch, opts: Partial<StartOptions> = {}): Promise<InProcessExporter | RunningExporter> {
  return 'stacks' in what ? inProcess(what, opts) : asProcess(what);
}

async function inProcess(config: ExporterConfig, opts: Partial<StartOptions>): Promise<InProcessExporter> {
  const chunks: string[] = [];
  const scrubber = new SecretScrubber();
  const logger = createLogger({
    level: config.logLevel,
    format: 'json',
    scrubber,
    destination: new Writable({
      write(chunk: Buffer, _enc, finished) {
        chunks.push(chunk.toString('utf8'));
        finished();
      },
    }),
  });
  const app = await start({ config, logger, scrubber, serve: false, schedule: false, defaultMetrics: false, ...opts });
  return { app, logText: () => chunks.join('') };
}

async function asProcess(launch: ExporterLaunch): Promise<RunningExporter> {
  const source = launch.from === 'source';
  if (!source && !launch.argv) requireBuild();
  const [command, ...argv] = launch.argv ?? (source ? [process.execPath, '--import', 'tsx', 'src/main.ts'] : [process.execPath, 'dist/main.js']);
  const bin = command === 'node' ? process.execPath : (command ?? process.execPath);
  const proc = startProcess(launch.name ?? 'exporter', bin, [...argv, ...(launch.args ?? [])], {
    cwd: REPO_ROOT,
    env: baseEnv({ EXPORTER_LISTEN_ADDRESS: '127.0.0.1:0', ...launch.env }),
  });
  // A bound against a hang (the wait ends with the line): on a loaded 2-core machine a start takes seconds.
  const line = await proc.waitForLine('"listening on" log line', (l) => listeningUrl(l) !== undefined, WAIT_MS);
  const url = new URL(listeningUrl(line) ?? '');
  return { proc, url: `${url.protocol}//127.0.0.1:${url.port}`, port: Number(url.port) };
}

/** Writes an exporter YAML config into `dir` and returns its path. */
export function writeExporterConfig(dir: string, config: Record<string, unknown>, name = 'exporter.yaml'): string {
  const path = join(dir, name);
  writeFileSync(path, stringify(config));
  return path;
}

/** Every poll interval of a stack at its minimum (10s), so that scenario changes show within seconds. */
export const FAST_INTERVALS = {
  inventory: '10s',
  license: '10s',
  connectors: '10s',
  ingestion: '10s',
  actions: '10s',
  actionJobs: '10s',
  actionJobsRefresh: '10s',
  changes: '10s',
  queries: '10s',
} as const;

/**
 * Waits until every enabled endpoint of a child exporter has finished its first poll: /readyz
 * answers 200 (the lists have answered) and the status page shows no pending row (Action jobs and
 * change history, which fill in after readiness, have too). Bounded by progress, not by the clock
 * alone: the wait goes on while the pending rows keep falling and fails when none has finished for
 * `stuckMs` (a hang), or after four times that in all. With many stacks on a loaded machine the
 * first polls take minutes of CPU, and they are done when they are done.
 */
export async function waitUntilReady(exporter: RunningExporter, stuckMs = WAIT_MS): Promise<void> {
  let fewest = Number.POSITIVE_INFINITY;
  let movedAt = Date.now();
  await waitFor(
    `${exporter.proc.name}: every endpoint's first poll finished`,
    async () => {
      const ready = await http(`${exporter.url}/readyz`);
      const page = await http(`${exporter.url}/`);
      const pending = page.text.split('<tr class="pending">').length - 1;
      if (ready.status === 200 && pending === 0) return true;
      if (pending < fewest) [fewest, movedAt] = [pending, Date.now()];
      const last = `/readyz ${ready.status}, ${pending} endpoints pending on the status page`;
      if (Date.now() - movedAt > stuckMs) throw new StopWaiting(`no pending endpoint finished its first poll for ${stuckMs} ms (hung); last seen: ${last}\n${exporter.proc.tail()}`);
      return notYet(last);
    },
    { timeoutMs: 4 * stuckMs, intervalMs: 500, gone: exporter.proc.gone },
  );
}
