/**
 * The built daemon (`node dist/main.js`) as a child process, as users and the container run it. It
 * listens on a loopback port it picks itself (port 0) and reports the address in its
 * "listening on" log line, which is where the tests read it from (no race for a free port).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startProcess, type ManagedProcess } from './processes.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { baseEnv, http, REPO_ROOT, requireBuild } from './tools.js';

export interface RunningExporter {
  readonly proc: ManagedProcess;
  /** http://127.0.0.1:<port> (https:// when serving TLS) */
  readonly url: string;
  readonly port: number;
}

export interface ExporterLaunch {
  /** Command and arguments; default `node dist/main.js`. */
  readonly argv?: readonly string[];
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

export async function startExporter(launch: ExporterLaunch): Promise<RunningExporter> {
  requireBuild();
  const [command, ...argv] = launch.argv ?? [process.execPath, 'dist/main.js'];
  const bin = command === 'node' ? process.execPath : (command ?? process.execPath);
  const proc = startProcess(launch.name ?? 'exporter', bin, [...argv, ...(launch.args ?? [])], {
    cwd: REPO_ROOT,
    env: baseEnv({ EXPORTER_LISTEN_ADDRESS: '127.0.0.1:0', ...launch.env }),
  });
  // A bound against a hang (the wait ends with the line): on a loaded 2-core machine a start takes seconds.
  const line = await proc.waitForLine('"listening on" log line', (l) => listeningUrl(l) !== undefined, 90_000);
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
 * Waits until every enabled endpoint has finished its first poll: /readyz answers 200 (the lists
 * have answered) and the status page shows no pending row (Action jobs and change history, which
 * fill in after readiness, have too). Bounded by progress, not by the clock alone: the wait goes on
 * while the pending rows keep falling and fails when none has finished for `timeoutMs` (a hang), or
 * after four times that in all. With many stacks on a loaded machine the first polls take minutes
 * of CPU, and they are done when they are done.
 */
export async function waitUntilReady(exporter: RunningExporter, timeoutMs = 90_000): Promise<void> {
  const hardDeadline = Date.now() + 4 * timeoutMs;
  let deadline = Date.now() + timeoutMs;
  let fewest = Number.POSITIVE_INFINITY;
  let last = 'no answer yet';
  while (Date.now() < Math.min(deadline, hardDeadline)) {
    if (exporter.proc.hasExited) throw new Error(`${exporter.proc.name} exited\n${exporter.proc.tail()}`);
    try {
      const ready = await http(`${exporter.url}/readyz`);
      const page = await http(`${exporter.url}/`);
      const pending = page.text.split('<tr class="pending">').length - 1;
      if (ready.status === 200 && pending === 0) return;
      last = `/readyz ${ready.status}, ${pending} endpoints pending on the status page`;
      if (pending < fewest) {
        fewest = pending;
        deadline = Date.now() + timeoutMs;
      }
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(500);
  }
  throw new Error(`${exporter.proc.name}: not ready, no pending endpoint finished its first poll for ${timeoutMs} ms; last seen: ${last}\n${exporter.proc.tail()}`);
}
