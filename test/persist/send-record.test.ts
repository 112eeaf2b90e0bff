/** The request record: every request that left a line, read back as the last two minutes' sends per stack. */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOURNAL_FILE, readJournal, ROTATE_BYTES, SendJournal } from '../../src/persist/send-record.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-journal-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const NOW = 1_800_000_000_000;

describe('the request record', () => {
  it('is missing before the first start', () => {
    expect(readJournal(dir, NOW)).toEqual({ kind: 'missing' });
  });

  it('starts with the sends it is given, records every one after, and reads back the last two minutes per stack', () => {
    const failures: unknown[] = [];
    // More than the budget's window (62 s) is read back; the budget filters it again.
    const journal = new SendJournal({ dir, current: () => new Map([['prod', [NOW - 130_000, NOW - 70_000, NOW - 5_000]]]), failed: (_s, err) => failures.push(err) });
    journal.start();
    journal.record('prod', NOW - 1000);
    journal.record('eu:1', NOW + 2000);
    journal.close();
    expect(statSync(join(dir, JOURNAL_FILE)).mode & 0o777).toBe(0o600);
    const read = readJournal(dir, NOW);
    expect(read).toEqual({ kind: 'read', sends: new Map([['prod', [NOW - 70_000, NOW - 5_000, NOW - 1000]], ['eu:1', [NOW + 2000]]]) });
    expect(failures).toEqual([]);
  });

  it('ignores a last line cut short by a kill, and calls a record with another line not readable', () => {
    writeFileSync(join(dir, JOURNAL_FILE), `${NOW - 10}\tprod\n${NOW - 5}\tpr`);
    expect(readJournal(dir, NOW)).toEqual({ kind: 'read', sends: new Map([['prod', [NOW - 10]]]) });
    appendFileSync(join(dir, JOURNAL_FILE), `od\nnot a line\n`);
    expect(readJournal(dir, NOW)).toMatchObject({ kind: 'unreadable', reason: expect.stringContaining('line 3') });
  });

  it('is cut back to the last minute once it grows past its bound', () => {
    let current = new Map<string, number[]>([['prod', []]]);
    const journal = new SendJournal({ dir, current: () => current, failed: () => undefined });
    journal.start();
    const line = `${NOW}\tprod\n`.length;
    const lines = Math.ceil(ROTATE_BYTES / line) + 10;
    for (let i = 0; i < lines; i++) {
      current = new Map([['prod', [NOW + i]]]);
      journal.record('prod', NOW + i);
    }
    journal.close();
    const size = readFileSync(join(dir, JOURNAL_FILE)).length;
    expect(size).toBeLessThan(ROTATE_BYTES);
    const read = readJournal(dir, NOW);
    // The newest send is there, before and after the cut.
    expect(read.kind === 'read' && read.sends.get('prod')?.includes(NOW + lines - 1)).toBe(true);
  });
});
