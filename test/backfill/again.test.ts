/**
 * The command to continue a backfill, printed runnable as it was started: the program from
 * process.argv (a checkout has no cmdb-exporter on PATH), the flags quoted for a shell, and the
 * environment variables the run used by name only.
 */
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { continueCommand, programWords, shellQuote } from '../../src/backfill/again.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-backfill-again-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the command to continue', () => {
  const nodeDir = dirname(process.execPath);

  it('node with the script as typed from the working directory, node by name when PATH finds this node', () => {
    const base = { execPath: process.execPath, execArgv: [], cwd: '/work/checkout', path: nodeDir };
    expect(programWords({ ...base, script: '/work/checkout/dist/main.js' })).toEqual(['node', 'dist/main.js']);
    expect(programWords({ ...base, script: '/opt/cmdb-exporter/dist/main.js' })).toEqual(['node', '/opt/cmdb-exporter/dist/main.js']);
    // Another node first on PATH (or none): the one that ran it, by its path.
    expect(programWords({ ...base, path: '', script: '/work/checkout/dist/main.js' })).toEqual([process.execPath, 'dist/main.js']);
    expect(programWords({ ...base, execArgv: ['--enable-source-maps'], script: '/work/checkout/dist/main.js' })).toEqual(['node', '--enable-source-maps', 'dist/main.js']);
  });

  it('tsx (its loader flags) as npx tsx; an npm bin link by its name when PATH finds it', () => {
    const tsx = ['--require', '/w/node_modules/tsx/dist/preflight.cjs', '--import', 'file:///w/node_modules/tsx/dist/loader.mjs'];
    expect(programWords({ execPath: process.execPath, execArgv: tsx, script: '/w/src/main.ts', cwd: '/w', path: '' })).toEqual(['npx', 'tsx', 'src/main.ts']);
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(dir, 'main.js'), '#!/usr/bin/env node\n');
    chmodSync(join(dir, 'main.js'), 0o755);
    symlinkSync(join(dir, 'main.js'), join(bin, 'cmdb-exporter'));
    const link = { execPath: process.execPath, execArgv: [], script: join(bin, 'cmdb-exporter'), cwd: '/elsewhere' };
    expect(programWords({ ...link, path: bin })).toEqual(['cmdb-exporter']);
    expect(programWords({ ...link, path: '' })).toEqual([join(bin, 'cmdb-exporter')]);
  });

  it('quotes what a shell would split or expand, and names the variables without their values', () => {
    expect(shellQuote("it's here")).toBe(`'it'\\''s here'`);
    expect(continueCommand(['node', 'dist/main.js'], ['--out', '/tmp/a b', '--from', '30d'], [])).toBe("node dist/main.js backfill --out '/tmp/a b' --from 30d");
    expect(continueCommand(['node', 'dist/main.js'], ['--from', '30d'], ['CMDB_BASE_URL', 'CMDB_CLIENT_ID', 'CMDB_SECRET'])).toBe(
      'node dist/main.js backfill --from 30d\n  (with CMDB_BASE_URL, CMDB_CLIENT_ID and CMDB_SECRET set as for this run; their values are not shown)',
    );
  });
});
