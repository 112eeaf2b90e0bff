/**
 * Opening a folder the exporter keeps its files in, for both commands (the daemon's --storage.path,
 * the backfill's --out): made if missing (0700, the exporter's user's alone), checked writable,
 * locked for this process (lock.ts), and cleared of the temporary files a killed process left
 * (atomic.ts). A folder that exists keeps its mode (it may be a volume another tool made); one that
 * every user can list gets a warning, though every file the exporter writes in it is 0600.
 */
import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { FOLDER_MODE, removeLeftTemporaries } from './atomic.js';
import { describeHolder, FolderLock, REFRESH_MS, type LockOptions } from './lock.js';

/** The lock's options (lock.ts); `fault` and `recovered` default to a log line (once until a refresh succeeds). */
export interface FolderOptions extends Pick<LockOptions, 'dir' | 'command' | 'flag' | 'lost' | 'fault' | 'recovered'> {
  readonly logger: Logger;
  /** Sub-folders to make in it (the daemon's `stacks`). */
  readonly subfolders?: readonly string[];
}

/** Thrown when the folder cannot be made or written (not when it is locked: FolderInUseError). */
export class FolderError extends Error {}

export class Folder {
  private constructor(
    readonly dir: string,
    private readonly lock: FolderLock,
  ) {}

  static async open(opts: FolderOptions): Promise<Folder> {
    const { dir, logger, flag } = opts;
    const existed = await stat(dir).then((s) => s.isDirectory(), () => false);
    const folders = [dir, ...(opts.subfolders ?? []).map((s) => join(dir, s))];
    try {
      for (const d of folders) await mkdir(d, { recursive: true, mode: FOLDER_MODE });
      for (const d of folders) await access(d, constants.R_OK | constants.W_OK | constants.X_OK);
    } catch (err) {
      throw new FolderError(`${dir} (${flag}) cannot be used to keep the exporter's files: ${(err as Error).message}`);
    }
    let failing = false;
    const lock = await FolderLock.acquire({
      dir,
      command: opts.command,
      flag,
      tookOver: (holder, why) => logger.warn({ folder: dir, holder: describeHolder(holder), why }, 'lock of a process that is gone taken over'),
      ...(opts.lost ? { lost: opts.lost } : {}),
      fault:
        opts.fault ??
        ((err) => {
          if (failing) return;
          failing = true;
          logger.error({ folder: dir, err: (err as Error).message }, `the lock of ${flag} cannot be refreshed: tried again every ${REFRESH_MS / 1000} s`);
        }),
      recovered:
        opts.recovered ??
        (() => {
          failing = false;
          logger.info({ folder: dir }, `the lock of ${flag} is refreshed again`);
        }),
    });
    let mode: number;
    try {
      for (const d of folders) removeLeftTemporaries(d);
      mode = (await stat(dir)).mode & 0o777;
    } catch (err) {
      lock.release();
      throw new FolderError(`${dir} (${flag}) cannot be used to keep the exporter's files: ${(err as Error).message}`);
    }
    if (existed && (mode & 0o007) !== 0) {
      logger.warn({ folder: dir, mode: mode.toString(8) }, `${flag}: every user of the machine may list this folder (its files are the exporter user's alone, mode 0600); chmod 0700 it to hide their names too`);
    }
    return new Folder(dir, lock);
  }

  /** Releases the lock (the files stay); a failure is told to `fault`, never thrown. */
  close(): void {
    this.lock.release();
  }
}
