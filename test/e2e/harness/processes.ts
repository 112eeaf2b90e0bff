/**
 * Child processes of the end-to-end tests. Output is captured line by line (for failure messages and
 * for the checks that no secret is ever logged), and every process is stopped on the way out: by the
 * suite's afterAll through stopAll(), and, should a worker exit without it, by a process 'exit'
 * handler, so that no orphan outlives a test run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'vitest';

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Stopped extends Exit {
  readonly name: string;
  /** Milliseconds from SIGTERM to exit. */
  readonly ms: number;
  /** True when SIGTERM was not enough and SIGKILL ended it. */
  readonly killed: boolean;
}

const running = new Set<ManagedProcess>();

/**
 * How long stopAll waits after SIGTERM before SIGKILL: past the daemon's own shutdown deadline
 * (10 s, then it exits 1 by itself), so that only a process that ignores SIGTERM is killed, not a
 * daemon whose deadline timer fired late on a loaded machine.
 */
const STOP_GRACE_MS = 20_000;
let exitHandlerInstalled = false;

function installExitHandler(): void {
  if (exitHandlerInstalled) return;
  exitHandlerInstalled = true;
  // 'exit' handlers run synchronously, so SIGKILL is all that is left to do there.
  process.once('exit', () => {
    for (const p of running) p.killNow();
  });
}

/** Splits a byte stream into lines; the last, unterminated part is kept until more arrives. */
function lineCollector(into: string[]): { push(chunk: Buffer): void; flush(): void } {
  let partial = '';
  return {
    push(chunk) {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      into.push(...parts);
    },
    flush() {
      if (partial) into.push(partial);
      partial = '';
    },
  };
}

export class ManagedProcess {
  readonly exited: Promise<Exit>;
  private readonly stdoutLines: string[] = [];
  private readonly stderrLines: string[] = [];
  private exit: Exit | undefined;
  private readonly lineWaiters = new Set<() => void>();

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    /** The child leads a process group of its own: SIGKILL goes to the whole group. */
    private readonly group = false,
  ) {
    const out = lineCollector(this.stdoutLines);
    const err = lineCollector(this.stderrLines);
    const notify = () => {
      for (const w of this.lineWaiters) w();
    };
    child.stdout?.on('data', (c: Buffer) => (out.push(c), notify()));
    child.stderr?.on('data', (c: Buffer) => (err.push(c), notify()));
    this.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        out.flush();
        err.flush();
        this.exit = { code, signal };
        running.delete(this);
        notify();
        resolve(this.exit);
      });
    });
    running.add(this);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exit !== undefined;
  }

  /** For waitFor's `gone`: once it exited, how, with the end of its output (nothing it would do can come any more). */
  readonly gone = (): string | undefined => (this.exit ? `${this.name} exited (${JSON.stringify(this.exit)})\n${this.tail()}` : undefined);

  lines(stream: 'stdout' | 'stderr' | 'both' = 'both'): string[] {
    if (stream === 'stdout') return [...this.stdoutLines];
    if (stream === 'stderr') return [...this.stderrLines];
    return [...this.stdoutLines, ...this.stderrLines];
  }

  /** Everything the process wrote, stdout then stderr. */
  output(): string {
    return this.lines().join('\n');
  }

  /** The last lines of both streams, for failure messages. */
  tail(count = 30): string {
    const pick = (l: string[]) => l.slice(-count).join('\n');
    return `--- ${this.name} stdout (last ${count} lines) ---\n${pick(this.stdoutLines)}\n--- ${this.name} stderr ---\n${pick(this.stderrLines)}`;
  }

  /** Resolves with the first line (either stream) that matches; fails on timeout or exit. */
  waitForLine(what: string, match: (line: string) => boolean, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.lines().find(match);
        if (found !== undefined) return finish(() => resolve(found));
        if (this.exit) {
          return finish(() => reject(new Error(`${this.name} exited (${JSON.stringify(this.exit)}) before ${what}\n${this.tail()}`)));
        }
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`${this.name}: no ${what} within ${timeoutMs} ms\n${this.tail()}`))), timeoutMs);
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.lineWaiters.delete(check);
        settle();
      };
      this.lineWaiters.add(check);
      check();
    });
  }

  /** Sends a signal (SIGHUP to reload, SIGINT as Ctrl-C does) and returns at once. */
  signal(signal: NodeJS.Signals): void {
    if (!this.exit) this.child.kill(signal);
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 10_000): Promise<Stopped> {
    const started = Date.now();
    if (this.exit) return { name: this.name, ...this.exit, ms: 0, killed: false };
    this.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
    });
    const first = await Promise.race([this.exited, timedOut]);
    clearTimeout(timer);
    if (first !== 'timeout') return { name: this.name, ...first, ms: Date.now() - started, killed: false };
    this.kill();
    const exit = await this.exited;
    return { name: this.name, ...exit, ms: Date.now() - started, killed: true };
  }

  /** Synchronous last resort for the process 'exit' handler. */
  killNow(): void {
    if (!this.exit) this.kill();
  }

  private kill(): void {
    if (this.group && this.child.pid !== undefined) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
        return;
      } catch {
        // the group is gone already
      }
    }
    this.child.kill('SIGKILL');
  }
}

export interface SpawnOptions {
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /**
   * Start the child in a process group of its own, killed whole (a program that leaves its own
   * children running when it is killed: buildah's run).
   */
  readonly group?: boolean;
}

/** Starts a long-running process whose output is captured; stdin is closed. */
export function startProcess(name: string, command: string, args: readonly string[], opts: SpawnOptions): ManagedProcess {
  installExitHandler();
  const child = spawn(command, [...args], { cwd: opts.cwd, env: { ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.group === true });
  return new ManagedProcess(name, child, opts.group === true);
}

export interface Completed extends Exit {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a short command to completion (bounded by `timeoutMs`, then killed), feeding `input` on stdin. */
export async function runToCompletion(
  command: string,
  args: readonly string[],
  opts: SpawnOptions & { input?: string; timeoutMs: number },
): Promise<Completed> {
  installExitHandler();
  const child = spawn(command, [...args], { cwd: opts.cwd, env: { ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const proc = new ManagedProcess(command, child);
  child.stdin?.on('error', () => {
    // The command may exit before reading all of stdin; its exit status tells what happened.
  });
  child.stdin?.end(opts.input ?? '');
  const timer = setTimeout(() => proc.killNow(), opts.timeoutMs);
  const exit = await proc.exited;
  clearTimeout(timer);
  return { ...exit, stdout: proc.lines('stdout').join('\n'), stderr: proc.lines('stderr').join('\n') };
}

/** Stops every process still running (concurrently) and reports how each ended. */
export async function stopAll(graceMs = STOP_GRACE_MS): Promise<Stopped[]> {
  return Promise.all([...running].map((p) => p.stop(graceMs)));
}

/** Names of processes started by this worker that are still running. */
/**
 * The end of an e2e file: stops every process it started, runs its own clean-up (simulators, the
 * temp directory), then checks that none is left and that each stopped on SIGTERM.
 */
export async function stopAllAndCheck(cleanUp: () => unknown = () => undefined): Promise<void> {
  const stopped = await stopAll();
  await cleanUp();
  expect(stillRunning(), 'processes left running').toEqual([]);
  expect(stopped.filter((s) => s.killed).map((s) => s.name), 'processes that ignored SIGTERM').toEqual([]);
}

export function stillRunning(): string[] {
  return [...running].map((p) => `${p.name} (pid ${String(p.pid)})`);
}
