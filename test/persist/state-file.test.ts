/** One stack's state file: written atomically (0600, no temporary file left), read back, and a damaged file fails to read. */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeLeftTemporaries } from '../../src/persist/atomic.js';
import { jsonPieces } from '../../src/persist/json-pieces.js';
import { readStateFile, STACKS_DIR, stateFileOf, stateFiles, writeStateFile } from '../../src/persist/state-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-state-file-'));
  mkdirSync(join(dir, STACKS_DIR));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const value = { format: 'x', list: Array.from({ length: 5000 }, (_, i) => ({ i, text: `row ${i}` })) };

describe('state files', () => {
  it('round-trips, readable by the owner only, with no temporary file left', async () => {
    const path = stateFileOf(dir, 'prod:eu-1');
    const bytes = await writeStateFile(path, jsonPieces(value));
    expect(bytes).toBe(statSync(path).size);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, STACKS_DIR))).toEqual(['prod%3Aeu-1.json.gz']);
    expect((await readStateFile(path)).value).toEqual(value);
    expect([...(await stateFiles(dir))]).toEqual([['prod:eu-1', path]]);
  });

  it('replaces the old file whole, never through a temporary file a crash left (with other permissions), which the folder clears', async () => {
    const path = stateFileOf(dir, 'prod');
    const left = `${path}.0123456789ab.tmp`;
    writeFileSync(left, 'left by a crash', { mode: 0o644 });
    await writeStateFile(path, jsonPieces({ n: 1 }));
    await Promise.all([writeStateFile(path, jsonPieces({ n: 2 })), writeStateFile(path, jsonPieces({ n: 2 }))]);
    expect((await readStateFile(path)).value).toEqual({ n: 2 });
    expect(readFileSync(left, 'utf8')).toBe('left by a crash');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    removeLeftTemporaries(join(dir, STACKS_DIR));
    expect(readdirSync(join(dir, STACKS_DIR))).toEqual(['prod.json.gz']);
  });

  it('fails to read a file cut short, one changed in the middle, and one that is not gzip', async () => {
    const path = stateFileOf(dir, 'prod');
    await writeStateFile(path, jsonPieces(value));
    const whole = readFileSync(path);
    truncateSync(path, Math.floor(whole.length / 2));
    await expect(readStateFile(path)).rejects.toThrow();
    const changed = Buffer.from(whole);
    for (let i = 100; i < 140; i++) changed[i] = (changed[i] as number) ^ 0xff;
    writeFileSync(path, changed);
    await expect(readStateFile(path)).rejects.toThrow();
    writeFileSync(path, '{"format":"cmdb-exporter-state"}');
    await expect(readStateFile(path)).rejects.toThrow();
  });

  it('lists only the files it writes', async () => {
    writeFileSync(join(dir, STACKS_DIR, 'notes.txt'), 'x');
    writeFileSync(join(dir, STACKS_DIR, 'prod.json.gz.tmp'), 'x');
    mkdirSync(join(dir, STACKS_DIR, 'lost+found'));
    expect([...(await stateFiles(dir)).keys()]).toEqual([]);
  });
});
