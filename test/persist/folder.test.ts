/**
 * The one road to the disk: a folder opened for the exporter (made 0700, locked, cleared of the
 * temporary files a killed process left; an existing one that every user can list is warned
 * about), documents written by the one recipe (0600, a temporary name of their own, whole or not at
 * all) and read only in their own format and version, and journals of whole lines (0600, a last
 * line cut short ignored, cut back atomically).
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeAtomicSync } from '../../src/persist/atomic.js';
import { readDocumentSync, writeDocumentSync } from '../../src/persist/document.js';
import { Folder } from '../../src/persist/folder.js';
import { Journal, readLines } from '../../src/persist/journal.js';
import { LOCK_FILE } from '../../src/persist/lock.js';
import { captureLogger } from '../helpers/log.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'cmdb-folder-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const mode = (path: string) => statSync(path).mode & 0o777;

describe('a folder of the exporter', () => {
  it('is made 0700 with its sub-folders, locked, and cleared of temporary files a killed process left', async () => {
    const dir = join(root, 'a', 'state');
    mkdirSync(join(root, 'a'), { mode: 0o755 });
    const log = captureLogger('info');
    const folder = await Folder.open({ dir, command: 'daemon', flag: '--storage.path', logger: log.logger, subfolders: ['stacks'] });
    expect([mode(dir), mode(join(dir, 'stacks')), mode(join(dir, LOCK_FILE))]).toEqual([0o700, 0o700, 0o600]);
    folder.close();
    writeFileSync(join(dir, 'stacks', 'prod.json.gz.0123456789ab.tmp'), 'cut short');
    writeFileSync(join(dir, 'notes.txt'), 'not ours to remove');
    (await Folder.open({ dir, command: 'daemon', flag: '--storage.path', logger: log.logger, subfolders: ['stacks'] })).close();
    expect(readdirSync(join(dir, 'stacks'))).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(['notes.txt', 'stacks']);
    expect(log.lines().filter((l) => l.level !== 'info')).toEqual([]);
  });

  it('keeps the mode of a folder that exists, with a warning when every user can list it', async () => {
    const dir = join(root, 'shared');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    const log = captureLogger('info');
    (await Folder.open({ dir, command: 'backfill', flag: '--out', logger: log.logger })).close();
    expect(mode(dir)).toBe(0o755);
    expect(log.lines().filter((l) => l.level === 'warn').map((l) => l.mode)).toEqual(['755']);
  });
});

describe('documents', () => {
  it('are written whole, 0600, each through a temporary file of its own, and read only in their format and version', () => {
    const path = join(root, 'doc.json');
    writeFileSync(path, 'old', { mode: 0o644 });
    for (let i = 0; i < 3; i++) writeDocumentSync(path, { format: 'test-doc', version: 2, n: i } as never);
    expect(mode(path)).toBe(0o600);
    expect(readdirSync(root)).toEqual(['doc.json']);
    expect(readDocumentSync(path, 'test-doc', 2)).toEqual({ kind: 'read', value: { format: 'test-doc', version: 2, n: 2 } });
    expect(readDocumentSync(path, 'test-doc', 3)).toMatchObject({ kind: 'other', reason: expect.stringContaining('version 2') });
    expect(readDocumentSync(path, 'another', 2).kind).toBe('other');
    expect(readDocumentSync(join(root, 'none.json'), 'test-doc', 2).kind).toBe('missing');
    writeAtomicSync(path, '{"format":"test-doc","vers');
    expect(readDocumentSync(path, 'test-doc', 2).kind).toBe('unreadable');
  });
});

describe('journals', () => {
  it('append whole lines (0600, also over a file an earlier version made 0644), ignore a last line cut short, and are cut back atomically', () => {
    const path = join(root, 'record.log');
    writeFileSync(path, 'a\n', { mode: 0o644 });
    for (const durability of ['process', 'disk'] as const) {
      const journal = new Journal(path, durability).open();
      journal.append(`b-${durability}`);
      journal.close();
    }
    expect(mode(path)).toBe(0o600);
    writeFileSync(path, `${readFileSync(path, 'utf8')}cut sho`);
    expect(readLines(path)).toEqual({ kind: 'read', lines: ['a', 'b-process', 'b-disk'] });
    const journal = new Journal(path, 'process');
    journal.replace(['c']);
    journal.append('d');
    journal.close();
    expect(readLines(path)).toEqual({ kind: 'read', lines: ['c', 'd'] });
    expect(readdirSync(root)).toEqual(['record.log']);
    journal.remove();
    expect(readLines(path)).toEqual({ kind: 'missing' });
  });
});
