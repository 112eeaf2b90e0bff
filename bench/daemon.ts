/**
 * The exporter as users run it: src/main.ts through tsx (or the built dist/main.js) in a process of
 * its own, either as the daemon (startDaemon: its URL once it listens, its log lines, a stop by
 * signal) or as a command run to its end (runMain: its output and wall time, e.g. `backfill`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stopProcess } from './children.js';
import { cpuMs } from './proc.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** Log lines kept of a daemon: a flood can make it log a lot. */
const MAX_LINES = 20_000;
const LISTEN_TIMEOUT_MS = 120_000;

export interface Daemon {
  readonly child: ChildProcess;
  /** The URL of its HTTP server, once it logged "listening on"; rejects when it exits first. */
  readonly url: Promise<string>;
  /** performance.now() at the spawn. */
  readonly spawnedAt: number;
  /** Its stdout and stderr lines, the first MAX_LINES. */
  readonly lines: string[];
  /** Seconds from the spawn to its first output on stdout (its modules loaded) and to its listening, and the CPU seconds it had used then. */
  readonly marks: { firstLine?: number; listened?: number; cpuSeconds?: number };
  /** Sends `signal` (SIGTERM unless said), SIGKILL after 20 s; resolves once it exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** The daemon with `args`, from `cwd` (another checkout's src/main.ts: default this one) or `built` (dist/main.js), listening on loopback. */
export function startDaemon(args: readonly string[], opts: { cwd?: string; env?: Readonly<Record<string, string>>; built?: boolean } = {}): Daemon {
  const main = opts.built ? [`${ROOT}dist/main.js`] : ['--import', 'tsx', 'src/main.ts'];
  const child = spawn(process.execPath, [...main, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', EXPORTER_LISTEN_ADDRESS: '127.0.0.1:0', LOG_LEVEL: 'info', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const spawnedAt = performance.now();
  const lines: string[] = [];
  const marks: Daemon['marks'] = {};
  const since = () => (performance.now() - spawnedAt) / 1000;
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the exporter did not listen within ${LISTEN_TIMEOUT_MS / 1000} s`)), LISTEN_TIMEOUT_MS);
    const reader = (stdout: boolean) => {
      let partial = '';
      return (chunk: Buffer) => {
        if (stdout) marks.firstLine ??= since();
        const parts = (partial + chunk.toString('utf8')).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) {
          if (lines.length < MAX_LINES) lines.push(line);
          const listening = line.includes('listening on') ? /"url":"(https?:\/\/[^"]+)"/.exec(line)?.[1] : undefined;
          if (listening) {
            clearTimeout(timer);
            marks.listened = since();
            cpuMs(child.pid ?? 0).then((ms) => (marks.cpuSeconds = ms / 1000), () => undefined);
            resolve(listening.replace('0.0.0.0', '127.0.0.1'));
          }
        }
      };
    };
    child.stdout?.on('data', reader(true));
    child.stderr?.on('data', reader(false));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the exporter exited (${String(code ?? signal)}) before it listened:\n${lines.slice(-20).join('\n')}`));
    });
  });
  url.catch(() => undefined);
  return { child, url, spawnedAt, lines, marks, stop: (signal) => stopProcess(child, signal) };
}

/** GET `url`/metrics: its text, or undefined when it fails or gives no 200 within `timeoutMs`. */
export async function scrapeText(url: string, timeoutMs = 10_000): Promise<string | undefined> {
  try {
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    return res.ok ? await res.text() : undefined;
  } catch {
    return undefined;
  }
}

/** src/main.ts with `args` (and `env` beside this process's) run to its end: stdout, the last 100 kB of stderr (also passed through as it comes), the wall time. */
export function runMain(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<{ code: number | null; stdout: string; stderr: string; seconds: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `${ROOT}src/main.ts`, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => {
      const text = c.toString('utf8');
      stderr = (stderr + text).slice(-100_000);
      process.stderr.write(text);
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr, seconds: (performance.now() - t0) / 1000 }));
  });
}
