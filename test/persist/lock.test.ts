/**
 * The lock of a folder the exporter writes in: it names its holder; a running holder on this host
 * is refused at once, naming the folder and the holder; a lock of a process that is gone (its pid
 * dead, or the pid now ours: an earlier start of this container) is taken over with one line; a lock
 * of another host is judged by its refresh time; a lock taken away is noticed at the next refresh.
 * A refresh never throws: an error of the folder is a fault, told and tried again; a lock removed
 * is made again; only a lock naming another holder is lost.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FolderInUseError } from '../../src/errors.js';
import { FolderLock, LOCK_FILE, STALE_SECONDS, type LockHolder } from '../../src/persist/lock.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const took: string[] = [];
const options = (extra: Partial<Parameters<typeof FolderLock.acquire>[0]> = {}) => ({
  dir,
  command: 'daemon',
  flag: '--storage.path',
  tookOver: (_h: LockHolder | undefined, why: string) => took.push(why),
  ...extra,
});

function plant(holder: Partial<LockHolder>, ageSeconds = 0): void {
  const path = join(dir, LOCK_FILE);
  writeFileSync(path, JSON.stringify({ pid: 1, host: hostname(), startedAt: 1_800_000_000, command: 'daemon', token: 'other', ...holder }));
  const at = new Date(Date.now() - ageSeconds * 1000);
  utimesSync(path, at, at);
}

/** The pid of a process that has ended. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout.trim() as unknown as number;
}

describe('the folder lock', () => {
  it('names its holder in a file of its own (0600), and is gone once released', async () => {
    const lock = await FolderLock.acquire(options());
    const holder = JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as LockHolder;
    expect(holder).toMatchObject({ pid: process.pid, host: hostname(), command: 'daemon' });
    expect(Math.abs(holder.startedAt - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2);
    expect(statSync(join(dir, LOCK_FILE)).mode & 0o777).toBe(0o600);
    lock.release();
    expect(() => statSync(join(dir, LOCK_FILE))).toThrow();
  });

  it('refuses a folder that a running process of this host holds, naming the folder and the holder', async () => {
    plant({ pid: process.ppid, command: 'backfill', startedAt: Date.parse('2026-11-01T10:00:00Z') / 1000 });
    const refused = await FolderLock.acquire(options()).then(() => undefined, (e: unknown) => e);
    expect(refused).toBeInstanceOf(FolderInUseError);
    expect((refused as Error).message).toContain(dir);
    expect((refused as Error).message).toContain(`pid ${process.ppid} on ${hostname()} (backfill, started 2026-11-01T10:00:00.000Z)`);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.ppid);
  });

  it('takes over, with one line, a lock whose process is gone, and one of an earlier start with this pid', async () => {
    took.length = 0;
    plant({ pid: Number(deadPid()) });
    (await FolderLock.acquire(options())).release();
    plant({ pid: process.pid, token: 'earlier' });
    (await FolderLock.acquire(options())).release();
    expect(took).toEqual(['its process is gone', 'it was left by an earlier start with this pid']);
  });

  it('takes over a lock of a live pid of this host that was not refreshed (the pid went to another process)', async () => {
    took.length = 0;
    plant({ pid: process.ppid }, STALE_SECONDS + 5);
    (await FolderLock.acquire(options())).release();
    expect(took[0]).toMatch(/its pid runs but the lock was not refreshed/);
  });

  it('judges a lock of another host by its refresh: refused when it is refreshed, taken over once stale', async () => {
    took.length = 0;
    plant({ host: 'elsewhere' }, STALE_SECONDS - 10);
    // The holder refreshes while this process looks.
    const refreshing = options({ sleep: async () => utimesSync(join(dir, LOCK_FILE), new Date(), new Date()) });
    await expect(FolderLock.acquire(refreshing)).rejects.toThrow(/in use by pid 1 on elsewhere/);
    plant({ host: 'elsewhere' }, STALE_SECONDS + 1);
    (await FolderLock.acquire(options())).release();
    expect(took).toEqual([`it was not refreshed for ${STALE_SECONDS} s`]);
  });

  it('a lock taken away is noticed at the next refresh, told once, and not removed at release', async () => {
    const lost: Array<LockHolder | undefined> = [];
    const lock = await FolderLock.acquire(options({ lost: (h) => lost.push(h) }));
    plant({ pid: process.ppid, token: 'thief' });
    lock.refresh();
    lock.refresh();
    lock.release();
    expect(lost.map((h) => h?.token)).toEqual(['thief']);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).token).toBe('thief');
  });

  it('a refresh that fails is a fault, told at each, never thrown and not lost; the next good refresh makes a removed lock again', async () => {
    const lost: Array<LockHolder | undefined> = [];
    const faults: string[] = [];
    let recovered = 0;
    const lock = await FolderLock.acquire(options({ lost: (h) => lost.push(h), fault: (err) => faults.push((err as NodeJS.ErrnoException).code ?? (err as Error).message), recovered: () => recovered++ }));
    const path = join(dir, LOCK_FILE);
    // A path that cannot be read as a file (root reads any mode, so not a chmod): EISDIR, as EIO or ESTALE would be.
    rmSync(path);
    mkdirSync(path);
    expect(() => lock.refresh()).not.toThrow();
    lock.refresh();
    expect(faults).toEqual(['EISDIR', 'EISDIR']);
    expect(recovered).toBe(0);
    // Removed: made again, naming this process, and told as recovered once.
    rmSync(path, { recursive: true });
    lock.refresh();
    lock.refresh();
    expect(recovered).toBe(1);
    expect(JSON.parse(readFileSync(path, 'utf8')).token).toBe(lock.holder.token);
    // A content that names no holder is a fault too, not a loss.
    writeFileSync(path, 'not a lock');
    lock.refresh();
    expect(faults).toHaveLength(3);
    expect(lost).toEqual([]);
    writeFileSync(path, JSON.stringify(lock.holder));
    lock.refresh();
    expect(recovered).toBe(2);
    lock.release();
    expect(() => statSync(path)).toThrow(/ENOENT/);
  });

  it('a release that fails is told as a fault, not thrown', async () => {
    const faults: string[] = [];
    const lock = await FolderLock.acquire(options({ fault: (err) => faults.push((err as NodeJS.ErrnoException).code ?? '') }));
    rmSync(join(dir, LOCK_FILE));
    mkdirSync(join(dir, LOCK_FILE));
    expect(() => lock.release()).not.toThrow();
    expect(faults).toEqual(['EISDIR']);
  });
});
