/**
 * One stack's state file: `<dir>/stacks/<stack>.json.gz`, gzip-compressed JSON, readable by the
 * exporter's user only (0600), written by the one recipe (atomic.ts): a crash or a full disk leaves
 * the old file or the new one, never a mix. gzip's CRC-32 makes a file cut short
 * or changed afterwards fail to read instead of reading wrong.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { writeAtomic } from './atomic.js';

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

/** Writes `pieces` (JSON text) gzipped to `path` atomically (atomic.ts); returns the bytes written. */
export function writeStateFile(path: string, pieces: AsyncIterable<string>): Promise<number> {
  return writeAtomic(path, pieces, { gzipLevel: GZIP_LEVEL });
}

/** The parsed JSON of a state file; throws when it cannot be read, is cut short, corrupt or not JSON. */
export async function readStateFile(path: string): Promise<{ value: unknown; bytes: number }> {
  const compressed = await readFile(path);
  const text = (await gunzipAsync(compressed)).toString('utf8');
  return { value: JSON.parse(text) as unknown, bytes: compressed.length };
}
