/**
 * The backfill command run in-process, its output captured; and reading what it wrote as
 * OpenMetrics text (the blocks route without promtool).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { runBackfill } from '../../src/backfill/command.js';

export class Sink extends Writable {
  text = '';
  constructor(readonly isTTY = false) {
    super();
  }
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

export interface CommandRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * `cmdb-exporter backfill ARGS` in this process, without promtool on PATH unless `env` says so; the
 * command to continue names the program `cmdb-exporter` (this process is the test runner), and
 * progress goes to a terminal when `tty` says so.
 */
export async function runCommand(args: string[], env: NodeJS.ProcessEnv = { PATH: '' }, tty = false): Promise<CommandRun> {
  const stdout = new Sink();
  const stderr = new Sink(tty);
  const code = await runBackfill(args, { stdout, stderr, env, now: Date.now, program: ['cmdb-exporter'] });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** Every sample line of the OpenMetrics files in `dir`: series text → timestamps (unix seconds). */
export function openMetricsSamples(dir: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.om'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const m = /^(\S+(?:\{.*\})?) (\S+) (\d+)$/.exec(line);
      if (!m) throw new Error(`not a sample line: ${line}`);
      const list = out.get(m[1] as string) ?? [];
      list.push(Number(m[3]));
      out.set(m[1] as string, list);
    }
  }
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}
