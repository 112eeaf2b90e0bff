/**
 * The README's commands work as written on a fresh checkout. Every ```sh block carries a marker on the
 * line before it saying what this test does with it:
 *
 *   <!-- readme-test: run -->              run with bash -euo pipefail; must exit 0
 *   <!-- readme-test: daemon "TEXT" -->    started; must print TEXT, then is stopped (SIGTERM)
 *   <!-- readme-test: skip (REASON) -->    not run here (a container engine, root, a real CMDB…)
 *
 * A block without a marker fails the test, so a new command cannot slip in unchecked. The blocks run
 * in a scratch copy of the repository's files (tracked and new, not dist/ or anything ignored), so
 * they see what a fresh clone sees. `npm ci` needs the registry, so there it is replaced by a check
 * that the lock file is there, and node_modules is linked from this checkout instead.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/daemon.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export type Marker = { kind: 'run' } | { kind: 'daemon'; expect: string } | { kind: 'skip'; reason: string };
export interface Block {
  readonly line: number;
  readonly code: string;
  readonly marker?: Marker;
}

function parseMarker(line: string): Marker | undefined {
  const m = /^<!-- readme-test: (run|daemon "([^"]+)"|skip \(([^)]+)\)) -->$/.exec(line.trim());
  if (!m) return undefined;
  if (m[1] === 'run') return { kind: 'run' };
  if (m[2] !== undefined) return { kind: 'daemon', expect: m[2] };
  return { kind: 'skip', reason: m[3] ?? '' };
}

/** The ```sh blocks of a markdown text with the marker on the line before each. */
export function shellBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash|shell)\s*$/.test(lines[i] ?? '')) {
      if ((lines[i] ?? '').startsWith('```')) {
        // another fenced block: skip to its end
        for (i++; i < lines.length && !(lines[i] ?? '').startsWith('```'); i++);
      }
      continue;
    }
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !(lines[i] ?? '').startsWith('```'); i++) body.push(lines[i] ?? '');
    const marker = parseMarker(lines[start - 1] ?? '');
    blocks.push({ line: start + 1, code: body.join('\n'), ...(marker ? { marker } : {}) });
  }
  return blocks;
}

/** `npm ci` needs the registry; the scratch copy links node_modules instead. */
function offline(code: string): string {
  return code.replace(/\bnpm ci\b/g, 'test -f package-lock.json');
}

/**
 * The README's fixed ports (`127.0.0.1:18480`, `--port 18480`) replaced by ports free now, the same
 * port for the same number within a block: another checkout's test run on this machine may hold
 * the README's ones.
 */
async function freshPorts(code: string): Promise<string> {
  const fixed = new Set([...code.matchAll(/(?:127\.0\.0\.1:|--port )(\d{4,5})\b/g)].map((m) => m[1] as string));
  let out = code;
  for (const port of fixed) out = out.replace(new RegExp(`\\b${port}\\b`, 'g'), String(await freePort()));
  return out;
}

/** The demo's ports (DEMO_*_PORT, documented in the README), free now rather than its defaults. */
async function demoPorts(): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['DEMO_SIMULATOR_PORT', 'DEMO_EXPORTER_PORT', 'DEMO_PROMETHEUS_PORT', 'DEMO_ALERTMANAGER_PORT']) env[name] = String(await freePort());
  return env;
}

/** The environment of a newcomer's shell: none of the CMDB, EXPORTER, DEMO, LOG or npm variables of this one. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(npm_|CMDB_|EXPORTER_|DEMO_|LOG_)/i.test(k)) env[k] = v;
  return { ...env, ...extra };
}

interface Ran {
  code: number | null;
  output: string;
}

function runBlock(cwd: string, code: string, timeoutMs: number, until?: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve) => {
    // Its own process group, so that stopping it reaches every process the block started.
    const child = spawn('bash', ['-euo', 'pipefail', '-c', code], { cwd, env: cleanEnv(extraEnv), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      output += `\n[readme-commands: timed out after ${timeoutMs} ms]`;
      stopping = true;
      stop('SIGKILL');
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (until !== undefined && !stopping && output.includes(until)) {
        stopping = true;
        stop('SIGTERM');
        setTimeout(() => stop('SIGKILL'), 15_000).unref();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('close', (code) => {
      clearTimeout(timer);
      // The group may outlive bash: make sure nothing of it is left.
      stop('SIGKILL');
      resolve({ code, output });
    });
  });
}

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const blocks = shellBlocks(README);
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'cmdb-readme-'));
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const file of files) {
    try {
      mkdirSync(dirname(join(scratch, file)), { recursive: true });
      cpSync(join(ROOT, file), join(scratch, file));
    } catch (err) {
      // A file listed by git but deleted in the working tree is not part of the checkout.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'), 'dir');
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the README commands', () => {
  it('has a marker on every shell block, skips only with a reason, and runs the offline ones', () => {
    expect(blocks.length).toBeGreaterThan(3);
    const unmarked = blocks.filter((b) => b.marker === undefined).map((b) => `README.md:${b.line}`);
    expect(unmarked, 'shell blocks without a <!-- readme-test: … --> marker').toEqual([]);
    const runnable = blocks.filter((b) => b.marker?.kind !== 'skip');
    expect(runnable.length).toBeGreaterThanOrEqual(2);
  });

  it('the block parser finds markers (so the check above can fail)', () => {
    const md = '<!-- readme-test: skip (no docker) -->\n```sh\ndocker ps\n```\n\n```yaml\na: 1\n```\n```sh\nls\n```\n';
    expect(shellBlocks(md)).toEqual([
      { line: 2, code: 'docker ps', marker: { kind: 'skip', reason: 'no docker' } },
      { line: 9, code: 'ls' },
    ]);
  });

  for (const block of blocks) {
    const marker = block.marker;
    if (marker?.kind === 'run') {
      it(`README.md:${block.line} runs and exits 0`, async () => {
        const ran = await runBlock(scratch, await freshPorts(offline(block.code)), 240_000);
        expect(ran.code, ran.output.slice(-4000)).toBe(0);
      }, 300_000);
    } else if (marker?.kind === 'daemon') {
      it(`README.md:${block.line} starts and prints "${marker.expect}"`, async () => {
        const ran = await runBlock(scratch, await freshPorts(offline(block.code)), 180_000, marker.expect, await demoPorts());
        expect(ran.output, ran.output.slice(-4000)).toContain(marker.expect);
      }, 240_000);
    }
  }
});
