/**
 * The command that continues a backfill, as its summary prints it ("to continue: …"), runnable from
 * the directory it was run in: the program as it was started (a checkout has no `cmdb-exporter` on
 * PATH: there it is `node dist/main.js` or `npx tsx src/main.ts`), its flags quoted for a POSIX
 * shell, and the environment variables the run used, named without their values.
 */
import { realpathSync } from 'node:fs';
import { basename, isAbsolute, relative, resolve } from 'node:path';
import { onPath } from '../executables.js';

/** How this process was started: process.execPath, process.execArgv, process.argv[1], the working directory, PATH. */
export interface Invocation {
  readonly execPath: string;
  readonly execArgv: readonly string[];
  readonly script: string | undefined;
  readonly cwd: string;
  readonly path: string;
}

export function invocationOf(proc: NodeJS.Process, env: NodeJS.ProcessEnv): Invocation {
  return { execPath: proc.execPath, execArgv: proc.execArgv, script: proc.argv[1], cwd: proc.cwd(), path: env.PATH ?? '' };
}

/** A word of the command line as a shell reads it back. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

const real = (path: string) => {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
};

/** A path as typed from `cwd`: relative below it (`dist/main.js`), else absolute. */
function fromCwd(path: string, cwd: string): string {
  const rel = relative(cwd, resolve(cwd, path));
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : resolve(cwd, path);
}

/** The words that start the program as this process was started, before `backfill`. */
export function programWords(p: Invocation): string[] {
  if (p.script === undefined) return ['cmdb-exporter'];
  const script = fromCwd(p.script, p.cwd);
  // tsx runs TypeScript through loader flags pointing into its package: a person starts it with npx tsx.
  if (p.execArgv.some((a) => /[\\/]tsx[\\/]/.test(a))) return ['npx', 'tsx', script];
  // A bin link with a shebang (npm's cmdb-exporter): the link itself, by its name when PATH finds it.
  if (!/\.[cm]?[jt]s$/.test(script)) {
    const found = onPath(basename(p.script), p.path);
    return [found !== undefined && real(found) === real(resolve(p.cwd, p.script)) ? basename(p.script) : script];
  }
  const node = onPath('node', p.path);
  return [node !== undefined && real(node) === real(p.execPath) ? 'node' : p.execPath, ...p.execArgv, script];
}

/** Variable names in prose: `A`, `A and B`, `A, B and C`. */
function names(list: readonly string[]): string {
  return list.length <= 1 ? (list[0] ?? '') : `${list.slice(0, -1).join(', ')} and ${list.at(-1)}`;
}

/**
 * `node dist/main.js backfill --config x --from 30d --out y`, and on the next line the variables the
 * run used when there were any: `  (with CMDB_BASE_URL, CMDB_CLIENT_ID and CMDB_SECRET set as for this run)`.
 */
export function continueCommand(program: readonly string[], argv: readonly string[], environment: readonly string[]): string {
  const command = [...program, 'backfill', ...argv].map(shellQuote).join(' ');
  if (environment.length === 0) return command;
  return `${command}\n  (with ${names(environment)} set as for this run; their values are not shown)`;
}
