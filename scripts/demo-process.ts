/**
 * The demo's server children (Prometheus, Alertmanager): started on loopback in a temporary
 * directory of their own, ready once their /-/ready answers, and stopped with their directory
 * removed. Every child started is registered, so that the demo can stop them all whatever ends it
 * (stopAllChildren on a signal or an error; killAllChildrenNow, synchronous, on process exit).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Whether `port` on 127.0.0.1 can be listened on right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** The preferred port, or a free one when it is taken (or 0). */
export async function choosePort(preferred: number): Promise<{ port: number; moved: boolean }> {
  const moved = preferred !== 0 && !(await portFree(preferred));
  return { port: preferred === 0 || moved ? await freePort() : preferred, moved };
}

export interface ServerChild {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** The child's own temporary directory (configuration, data), removed by close(). */
  readonly dir: string;
  readonly pid: number | undefined;
  /** Sends the child a signal (SIGHUP: re-read its configuration). */
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM, SIGKILL after 5 s; then the directory goes. */
  close(): Promise<void>;
}

const children = new Set<ChildProcess>();
const stoppers = new Set<() => Promise<void>>();

/** A temporary directory for a child, `cmdb-exporter-demo-<name>-…`. */
export function childDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `cmdb-exporter-demo-${name}-`));
}

async function waitReady(name: string, url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited before it was ready:\n${output()}`);
    try {
      const r = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2000) });
      await r.arrayBuffer();
      if (r.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} was not ready within 60 s:\n${output()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Starts `binary args` in `dir` (its own), listening at `url`; resolves once /-/ready answers 200. */
export async function startServerChild(name: string, binary: string, args: readonly string[], dir: string, url: string): Promise<ServerChild> {
  const child = spawn(binary, [...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-4000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => children.delete(child));
  const close = async () => {
    stoppers.delete(close);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  stoppers.add(close);
  try {
    await waitReady(name, url, child, () => output);
  } catch (err) {
    await close();
    throw err;
  }
  return { url, dir, pid: child.pid, signal: (s) => void child.kill(s), close };
}

/** Stops every child still running and removes their directories. */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...stoppers].map((stop) => stop()));
}

/** The last resort on process exit (no await possible there): SIGKILL to every child still running. */
export function killAllChildrenNow(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/**
 * Whether `url` serves a web application: 200 and an HTML page that loads a script. Debian's packages
 * of Prometheus 3 and Alertmanager ship no web UI: Prometheus answers 404 there (500 for 2.42's classic
 * pages without their templates), Alertmanager a static page that says so (200, no script).
 */
export async function servesWebApp(url: string): Promise<boolean> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
    const text = await r.text();
    return r.status === 200 && /<script\b/i.test(text);
  } catch {
    return false;
  }
}
