/** Runs `src/simulator/main.ts` as a child process (through tsx), as `npm run simulator` does. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A bound against a hang: starting through tsx takes 10–20 s on a loaded 2-core machine. */
const START_TIMEOUT_MS = 90_000;

export interface CliProcess {
  url: string;
  port: number;
  stdout: () => string;
  child: ChildProcess;
  /** Send the signal and wait for the exit code. */
  stop: (signal: NodeJS.Signals) => Promise<number | null>;
}

export function runCli(args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/simulator/main.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done };
}

/** Start the CLI and wait (bounded) until it has printed its whole banner. */
export async function startCli(args: string[]): Promise<CliProcess> {
  const { child, done } = runCli(args);
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`simulator CLI did not start within ${START_TIMEOUT_MS} ms: ${out}`));
    }, START_TIMEOUT_MS);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /base URL\s+(\S+)/.exec(out);
      // The banner ends with the data line: wait for all of it.
      if (m && /\n {2}data .*\n/.test(out)) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    });
    void done.then(({ code, stderr }) => {
      clearTimeout(timer);
      reject(new Error(`simulator CLI exited with ${code}: ${stderr}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    stdout: () => out,
    child,
    stop: async (signal) => {
      child.kill(signal);
      return (await done).code;
    },
  };
}
