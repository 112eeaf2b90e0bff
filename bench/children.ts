/**
 * Child processes of the benchmark: the simulator and the exporter each run in their own Node
 * process (TypeScript through tsx's loader), so each one's CPU and memory are its own. Both have an
 * IPC channel: the exporter answers commands over it, and both exit when the benchmark goes away.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const START_TIMEOUT_MS = 120_000;
const COMMAND_TIMEOUT_MS = 600_000;

export interface Child {
  readonly process: ChildProcess;
  /** The first line the child printed on stdout that starts with `{`, parsed as JSON. */
  readonly ready: unknown;
  /** Send a command and wait for its answer (exporter process only). */
  call<T>(command: string, args?: unknown): Promise<T>;
  stop(): Promise<void>;
}

interface Answer {
  readonly id: number;
  readonly ok: boolean;
  readonly result?: unknown;
  readonly error?: string;
}

type Outcome = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: Error };

function firstLine(child: ChildProcess, name: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not print its first line within ${timeoutMs} ms`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        // Lines Node prints before the ready line (e.g. under --trace-gc) are passed through.
        if (!line.startsWith('{')) {
          process.stderr.write(`${line}\n`);
          continue;
        }
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        // Anything after the ready line is passed through for the reader of the benchmark.
        process.stderr.write(buffered);
        child.stdout?.pipe(process.stderr);
        resolve(line);
        return;
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${String(code)} before it was ready`));
    });
  });
}

/** Starts bench/<script> with tsx, `args` and extra Node options; resolves once it printed its ready line. */
export async function startChild(script: string, args: readonly string[], opts: { exposeGc?: boolean; nodeArgs?: readonly string[]; startTimeoutMs?: number } = {}): Promise<Child> {
  const path = fileURLToPath(new URL(`./${script}`, import.meta.url));
  const execArgv = ['--import', 'tsx', ...(opts.exposeGc ? ['--expose-gc'] : []), ...(opts.nodeArgs ?? [])];
  const child = fork(path, [...args], { execArgv, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  let ready: unknown;
  try {
    ready = JSON.parse(await firstLine(child, script, opts.startTimeoutMs ?? START_TIMEOUT_MS)) as unknown;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }

  let nextId = 1;
  /** The commands sent and not yet answered: each settles once, with its answer, a timeout or the child's exit. */
  const pending = new Map<number, (outcome: Outcome) => void>();
  child.on('message', (message: Answer) => {
    pending.get(message.id)?.(message.ok ? { ok: true, result: message.result } : { ok: false, error: new Error(`${script}: ${message.error ?? 'command failed'}`) });
  });
  child.once('exit', (code) => {
    for (const settle of pending.values()) settle({ ok: false, error: new Error(`${script} exited with code ${String(code)}`) });
  });

  const call = <T>(command: string, args?: unknown): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      const settle = (outcome: Outcome) => {
        clearTimeout(timer);
        pending.delete(id);
        if (outcome.ok) resolve(outcome.result as T);
        else reject(outcome.error);
      };
      const timer = setTimeout(() => settle({ ok: false, error: new Error(`${script}: ${command} took longer than ${COMMAND_TIMEOUT_MS} ms`) }), COMMAND_TIMEOUT_MS);
      pending.set(id, settle);
      child.send({ id, command, args });
    });

  return { process: child, ready, call, stop: () => stopProcess(child) };
}

/** Sends `signal` to a process of the benchmark's, SIGKILL after 20 s; resolves once it exited. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Probes every `everyMs` until `probe` gives something other than a string (a string says what is
 * still missing), or fails once performance.now() passes `deadlineMs`.
 */
export async function until<T>(what: string, deadlineMs: number, probe: () => Promise<T | string>, everyMs = 250): Promise<T> {
  let last = 'no answer';
  while (performance.now() < deadlineMs) {
    const value = await probe();
    if (typeof value !== 'string') return value;
    last = value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`no ${what} in time; last: ${last}`);
}

/** Until `url`/readyz answers 200, for at most `timeoutMs`. */
export function untilReady(url: string, timeoutMs: number): Promise<true> {
  return until('/readyz 200', performance.now() + timeoutMs, async () => ((await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200 ? true : 'not ready'), 100);
}
