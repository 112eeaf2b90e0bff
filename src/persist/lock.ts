/**
 * The lock of a folder the exporter keeps its files in: one folder belongs to one process, daemon
 * or backfill, at a time. `DIR/cmdb-exporter.lock` is created new (O_EXCL, 0600) and names its
 * holder. docs/restarts.md ("One process per folder: the lock") says when a lock is taken over,
 * lost or made again, and why not proper-lockfile. A refresh never throws (it runs on a timer).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { FolderInUseError } from '../errors.js';
import { FILE_MODE, syncFolderSync } from './atomic.js';

export const LOCK_FILE = 'cmdb-exporter.lock';
/** How often a holder refreshes its lock's time. */
export const REFRESH_MS = 10_000;
/** A lock of another host not refreshed for this long belongs to no running process. */
export const STALE_SECONDS = 30;

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** Unix seconds when the holder's process started. */
  readonly startedAt: number;
  /** `daemon` or `backfill`. */
  readonly command: string;
  /** Tells this holder's lock from a later one of the same pid (a container started again). */
  readonly token: string;
}

export interface LockOptions {
  readonly dir: string;
  readonly command: string;
  /** The flag that named the folder, for the messages: `--storage.path`, `--out`. */
  readonly flag: string;
  /** One line when a lock left by a process that is gone is taken over. */
  readonly tookOver: (holder: LockHolder | undefined, why: string) => void;
  /** The lock names another holder now (another process took the folder): told once, and the refresh stops. */
  readonly lost?: (holder: LockHolder | undefined) => void;
  /** A refresh (or the release) failed: told at each failed one; the next refresh tries again. */
  readonly fault?: (err: unknown) => void;
  /** A refresh succeeded again after a fault. */
  readonly recovered?: () => void;
  /** Waits between looks at a lock of another host (tests shorten it). */
  readonly sleep?: (ms: number) => Promise<void>;
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function readHolder(path: string): { holder: LockHolder | undefined; text: string; mtimeMs: number } | undefined {
  let text: string;
  let mtimeMs: number;
  try {
    text = readFileSync(path, 'utf8');
    mtimeMs = statSync(path).mtimeMs;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const h = JSON.parse(text) as Partial<LockHolder>;
    const ok = typeof h.pid === 'number' && typeof h.host === 'string' && typeof h.startedAt === 'number' && typeof h.command === 'string' && typeof h.token === 'string';
    return { holder: ok ? (h as LockHolder) : undefined, text, mtimeMs };
  } catch {
    return { holder: undefined, text, mtimeMs };
  }
}

/** Whether a process of this pid runs (on this host). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `pid 123 on host-a (daemon, started 2026-11-28T09:00:00Z)`. */
export function describeHolder(h: LockHolder | undefined): string {
  return h ? `pid ${h.pid} on ${h.host} (${h.command}, started ${new Date(h.startedAt * 1000).toISOString()})` : 'a process that left no readable name in it';
}

export class FolderLock {
  private timer: NodeJS.Timeout | undefined;
  private released = false;
  /** The last refresh failed (told as a fault). */
  private faulty = false;

  private constructor(
    readonly path: string,
    readonly holder: LockHolder,
    private readonly opts: LockOptions,
  ) {}

  /** Locks `opts.dir` for this process; throws FolderInUseError when a running process holds it. */
  static async acquire(opts: LockOptions): Promise<FolderLock> {
    const path = join(opts.dir, LOCK_FILE);
    const holder: LockHolder = { pid: process.pid, host: hostname(), startedAt: Math.round(Date.now() / 1000 - process.uptime()), command: opts.command, token: randomBytes(8).toString('hex') };
    // Bounded: each turn either creates the lock, refuses, or removes a lock of a process that is gone.
    for (let turn = 0; turn < 20; turn++) {
      if (create(path, holder)) {
        const lock = new FolderLock(path, holder, opts);
        lock.start();
        return lock;
      }
      const found = readHolder(path);
      if (!found) continue;
      const verdict = await judge(found, holder, opts);
      if (verdict.held === 'retry') continue;
      if (verdict.held) throw new FolderInUseError(`${opts.dir} (${opts.flag}) is in use by ${describeHolder(found.holder)}: one folder belongs to one process at a time. Stop that process, or give this one another ${opts.flag}`);
      if (takeOver(path, found.text)) opts.tookOver(found.holder, verdict.why);
    }
    throw new FolderInUseError(`${opts.dir} (${opts.flag}): its lock ${LOCK_FILE} keeps changing hands; is another process starting on it?`);
  }

  private start(): void {
    this.timer = setInterval(() => this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  /**
   * Still ours: its time is set to now (so another host sees it alive). Removed: made again. Naming
   * another holder: lost, once. Any error (the folder read-only, EIO, EACCES, ESTALE, a content that
   * is no lock) is a fault, tried again at the next refresh: never thrown from the timer.
   */
  refresh(): void {
    if (this.released) return;
    try {
      const found = readHolder(this.path);
      if (found?.holder && found.holder.token !== this.holder.token) {
        clearInterval(this.timer);
        this.released = true;
        this.opts.lost?.(found.holder);
        return;
      }
      if (found?.holder) {
        const now = new Date();
        utimesSync(this.path, now, now);
      } else if (found) {
        throw new Error(`${this.path} does not name this process (its content is not a lock of cmdb-exporter)`);
      } else if (!create(this.path, this.holder)) {
        // Made by another process this instant: the next refresh reads whose it is.
        throw new Error(`${this.path} was removed and made again by another process`);
      }
    } catch (err) {
      this.faulty = true;
      this.opts.fault?.(err);
      return;
    }
    if (!this.faulty) return;
    this.faulty = false;
    this.opts.recovered?.();
  }

  /** Removes the lock, when it is still this process's. A failure is told as a fault (the next start takes the lock over), never thrown. */
  release(): void {
    clearInterval(this.timer);
    if (this.released) return;
    this.released = true;
    try {
      if (readHolder(this.path)?.holder?.token !== this.holder.token) return;
      rmSync(this.path, { force: true });
      syncFolderSync(this.opts.dir);
    } catch (err) {
      this.opts.fault?.(err);
    }
  }
}

/** Creates the lock naming `holder`; false when one exists. */
function create(path: string, holder: LockHolder): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, `${JSON.stringify(holder)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  syncFolderSync(join(path, '..'));
  return true;
}

/**
 * Whether the lock found is held by a running process. A lock of this host is judged by its pid; a
 * lock of another host by its refresh time: while it is fresh, this process waits (at most
 * STALE_SECONDS) for it to go stale, and a refresh meanwhile says its holder runs.
 */
async function judge(found: NonNullable<ReturnType<typeof readHolder>>, me: LockHolder, opts: LockOptions): Promise<{ held: boolean | 'retry'; why: string }> {
  const { holder, mtimeMs } = found;
  const age = (Date.now() - mtimeMs) / 1000;
  if (!holder) {
    // Being written this instant by a process that just created it: a second look decides.
    if (age < 2) {
      await (opts.sleep ?? wait)(500);
      return { held: 'retry', why: 'being written' };
    }
    return { held: false, why: 'its content is not a lock of cmdb-exporter' };
  }
  if (holder.host === me.host) {
    if (holder.pid === me.pid) return { held: false, why: 'it was left by an earlier start with this pid' };
    if (!processAlive(holder.pid)) return { held: false, why: 'its process is gone' };
    if (age <= STALE_SECONDS) return { held: true, why: 'its process runs' };
    // A live holder refreshes every REFRESH_MS: this pid was given to another process since.
    return { held: false, why: `its pid runs but the lock was not refreshed for ${Math.round(age)} s` };
  }
  const sleep = opts.sleep ?? wait;
  for (let looked = 0; (Date.now() - mtimeMs) / 1000 <= STALE_SECONDS && looked < STALE_SECONDS * 2 + 2; looked++) {
    await sleep(500);
    const again = readHolder(join(opts.dir, LOCK_FILE));
    if (!again || again.text !== found.text) return { held: 'retry', why: 'it changed hands' };
    if (again.mtimeMs !== mtimeMs) return { held: true, why: 'it is refreshed' };
  }
  return { held: false, why: `it was not refreshed for ${STALE_SECONDS} s` };
}

/**
 * Removes the lock whose content was `text`, and only that one: it is moved aside first and put
 * back when it turns out another process replaced it meanwhile. True when one was removed.
 */
function takeOver(path: string, text: string): boolean {
  const aside = `${path}.${randomBytes(6).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  let moved = '';
  try {
    moved = readFileSync(aside, 'utf8');
  } catch {
    // unreadable: it is put back below and judged again
  }
  if (moved !== text) {
    try {
      linkSync(aside, path);
    } catch {
      // Another process created one meanwhile: that one stands.
    }
  }
  rmSync(aside, { force: true });
  return moved === text;
}

/**
 * The process that holds `dir` and runs now, without taking the lock (a backfill reading a daemon's
 * --storage.path): on this host one whose pid is alive and whose lock was refreshed within
 * STALE_SECONDS, on another host one whose lock was refreshed within STALE_SECONDS; undefined when
 * no lock is there or its holder is gone.
 */
export function runningHolder(dir: string): LockHolder | undefined {
  let found: ReturnType<typeof readHolder>;
  try {
    found = readHolder(join(dir, LOCK_FILE));
  } catch {
    return undefined;
  }
  const holder = found?.holder;
  if (!found || !holder) return undefined;
  if ((Date.now() - found.mtimeMs) / 1000 > STALE_SECONDS) return undefined;
  if (holder.host === hostname() && (holder.pid === process.pid || !processAlive(holder.pid))) return undefined;
  return holder;
}
