/**
 * What the end-to-end tests need from the machine: the real parts (pinned and fetched on first use
 * by scripts/parts), the built daemon, free loopback ports, temporary directories, and plain HTTP
 * requests to loopback.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { part, type PartName } from '../../../scripts/parts/index.js';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The path of a real part (Prometheus, promtool, Alertmanager, amtool, VictoriaMetrics, Chromium, …)
 * of the tier CMDB_PARTS_TIER names, fetched on first use; throws with which part, which version and
 * what to do when it cannot be had (scripts/parts/index.ts, docs/testing.md).
 */
export function requirePart(name: PartName): string {
  return part(name);
}

/** Throws, naming the build command, when the compiled daemon is missing. */
export function requireBuild(): void {
  for (const file of ['dist/main.js', 'dist/healthcheck.js']) {
    if (!existsSync(join(REPO_ROOT, file))) {
      throw new Error(`${file} is missing: run \`npm run build\` first (\`npm run test:e2e\` does)`);
    }
  }
}

/** A loopback port that was free a moment ago (for processes that cannot listen on port 0 and report it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a server that cannot listen on port 0 and report its port (Prometheus, Alertmanager,
 * VictoriaMetrics) on a free port. Files run side by side, so another process may take the port
 * between freePort() and the server's bind: then `start` fails with "address already in use" and
 * the server is started again on another free port.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await start(port);
    } catch (err) {
      if (attempt >= attempts || !/address already in use/i.test(err instanceof Error ? err.message : String(err))) throw err;
    }
  }
}

export function makeTempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `cmdb-e2e-${prefix}-`));
}

export function removeDir(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/**
 * The smallest environment a child process needs: nothing of the developer's CMDB_* settings leaks
 * in, but CMDB_SIM_DAY_OFFSET does, so that a simulator a child starts (the demo's, the compose
 * file's) draws the same days as the ones this process starts.
 */
export function baseEnv(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const offset = process.env.CMDB_SIM_DAY_OFFSET;
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', ...(offset === undefined ? {} : { CMDB_SIM_DAY_OFFSET: offset }), ...extra };
}

export interface HttpReply {
  readonly status: number;
  readonly text: string;
  readonly contentType: string;
}

/** GET (or another method) on loopback with a deadline; the body is always read. */
export async function http(url: string, init: { method?: string; timeoutMs?: number } = {}): Promise<HttpReply> {
  const res = await fetch(url, { method: init.method ?? 'GET', signal: AbortSignal.timeout(init.timeoutMs ?? 10_000) });
  return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') ?? '' };
}

/** Which of `secrets` occur in `text`, masked so that a failure message does not repeat them whole. */
export function leakedSecrets(text: string, secrets: readonly string[]): string[] {
  return secrets.filter((s) => s.length > 0 && text.includes(s)).map((s) => `${s.slice(0, 4)}…(${s.length} chars)`);
}
