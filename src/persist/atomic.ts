/**
 * The one way a document reaches the disk, for both commands (docs/restarts.md, "How and when it is
 * written", also says why not write-file-atomic): a temporary file beside it (created new, 0600) is
 * written, flushed (fsync) and renamed over it, then the folder is flushed, so that the rename
 * survives a power loss. Asynchronous for large documents made in pieces (a stack's state,
 * gzip-compressed on the way); synchronous for small ones written between two steps that must not
 * interleave (the backfill's state after each window, the request record when cut back).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

/** Files of the exporter: its user's alone. */
export const FILE_MODE = 0o600;
/** Folders the exporter makes: its user's alone. */
export const FOLDER_MODE = 0o700;

const TEMP = /\.[0-9a-f]{12}\.tmp$/;

/** A temporary name beside `path`, unique to this write: `<name>.<12 hex>.tmp`. */
function temporaryOf(path: string): string {
  return `${path}.${randomBytes(6).toString('hex')}.tmp`;
}

/** Flushes a folder's entries (a rename in it) to the disk. */
export function syncFolderSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `text` to `path` atomically and durably (see the head of this file). */
export function writeAtomicSync(path: string, text: string | Buffer): void {
  const tmp = temporaryOf(path);
  try {
    // 'wx': a new file, never one that a crash left with another mode.
    const fd = openSync(tmp, 'wx', FILE_MODE);
    try {
      writeFileSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  syncFolderSync(dirname(path));
}

/** Writes `pieces` to `path` atomically and durably, gzip-compressed when `gzipLevel` is set; returns the bytes written. */
export async function writeAtomic(path: string, pieces: AsyncIterable<string | Buffer> | Iterable<string | Buffer>, opts: { gzipLevel?: number } = {}): Promise<number> {
  const tmp = temporaryOf(path);
  let bytes = 0;
  try {
    const handle = await open(tmp, 'wx', FILE_MODE);
    try {
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          handle.write(chunk).then(() => done(), done);
        },
      });
      const source = Readable.from(pieces);
      if (opts.gzipLevel === undefined) await pipeline(source, sink);
      else await pipeline(source, createGzip({ level: opts.gzipLevel }), sink);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  await syncFolder(dirname(path));
  return bytes;
}

/**
 * Removes the temporary files an earlier process left in `dir` when it was killed mid-write (only
 * once the folder is locked: then no other process of the exporter is writing in it).
 */
export function removeLeftTemporaries(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) if (TEMP.test(name)) rmSync(join(dir, basename(name)), { force: true });
}
