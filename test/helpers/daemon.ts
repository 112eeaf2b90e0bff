/**
 * The daemon as a child process (src/main.ts through tsx), with its output captured, for tests of
 * what only a whole process shows: exit codes, signals, start-up errors, log lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

export interface Daemon {
  readonly child: ChildProcess;
  /** stdout and stderr as they arrived, together: for what the output mentions, never for order. */
  output(): string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name). */
  readonly exited: Promise<number | string>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
  /** For waitFor's `gone`: once it exited, with what code and the end of its output (it will never answer). */
  gone(): string | undefined;
}

export function runDaemon(args: string[], env: Record<string, string | undefined>): Daemon {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: ROOT,
    // TMPDIR passed on: what the daemon writes to the temporary folder lands where the test run's does.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, NO_PROXY: '*', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Both streams in arrival order (for "does the output mention X"), and each stream alone: how the
  // two interleave depends on the machine's load, so no test may assert on it.
  let out = '';
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString('utf8');
    stdout += d.toString('utf8');
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString('utf8');
    stderr += d.toString('utf8');
  });
  // 'close', not 'exit': the last lines of a stream may arrive after the process has exited.
  const exited = once(child, 'close').then(([code, signal]) => (code ?? signal) as number | string);
  return {
    child,
    output: () => out,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    gone: () => (child.exitCode !== null || child.signalCode !== null ? `the daemon exited (${String(child.exitCode ?? child.signalCode)}):\n${out.slice(-4000)}` : undefined),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}
