/**
 * One stack's state file: `<dir>/stacks/<stack>.json.gz`, gzip-compressed JSON, readable by the
 * exporter's user only (0600). Written atomically: a temporary file beside it is written, flushed to
 * the disk (fsync) and renamed over the old one, and the directory is flushed too, so a crash or a
 * full disk leaves the old file or the new one, never a mix. gzip's CRC-32 makes a file cut short
 * or changed afterwards fail to read instead of reading wrong.
 */
import { readdir, readFile, rename, rm, open } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip, gunzip } from 'node:zlib';

const gunzipAsync = promisify(gunzip);
const SUFFIX = '.json.gz';
/** Fast and still small: the state is JSON with repetitive labels (about 10× smaller at level 3). */
const GZIP_LEVEL = 3;

export const STACKS_DIR = 'stacks';

/** The file of `stack` (stack names are letters, digits and `_ . : -`; `:` is written `%3A`). */
export function stateFileOf(dir: string, stack: string): string {
  return join(dir, STACKS_DIR, `${encodeURIComponent(stack)}${SUFFIX}`);
}

/** The stacks that have a state file in `dir`, by name. */
export async function stateFiles(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(join(dir, STACKS_DIR), { withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(SUFFIX)) continue;
    try {
      out.set(decodeURIComponent(entry.name.slice(0, -SUFFIX.length)), join(dir, STACKS_DIR, entry.name));
    } catch {
      // Not a name this exporter writes: left alone.
    }
  }
  return out;
}

/** Flushes a directory's entries (a rename in it) to the disk. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `pieces` (JSON text) gzipped to `path` atomically; returns the bytes written. */
export async function writeStateFile(path: string, pieces: AsyncIterable<string>): Promise<number> {
  const tmp = `${path}.tmp`;
  let bytes = 0;
  try {
    const handle = await open(tmp, 'w', 0o600);
    try {
      // A temporary file left by a crash keeps its old mode: set it again.
      await handle.chmod(0o600);
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          bytes += chunk.length;
          handle.write(chunk).then(() => done(), done);
        },
      });
      await pipeline(Readable.from(pieces), createGzip({ level: GZIP_LEVEL }), sink);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  await syncDir(join(path, '..'));
  return bytes;
}

/** The parsed JSON of a state file; throws when it cannot be read, is cut short, corrupt or not JSON. */
export async function readStateFile(path: string): Promise<{ value: unknown; bytes: number }> {
  const compressed = await readFile(path);
  const text = (await gunzipAsync(compressed)).toString('utf8');
  return { value: JSON.parse(text) as unknown, bytes: compressed.length };
}

export async function removeStateFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
