/**
 * The daemon's current tokens in its --storage.path (src/persist/token-file.ts): written at each
 * grant, 0600, naming the stack's service only as a hash; gone at the daemon's start and stop; read
 * by a backfill only while a running daemon holds the folder, for the same base URL and client id.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../src/persist/lock.js';
import { daemonToken, TokenKeeper, TOKENS_FILE } from '../../src/persist/token-file.js';
import { captureLogger } from '../helpers/log.js';
import { testStack } from '../cmdb/helpers/stack.js';

const dirs: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-token-file-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The folder's lock naming a running process (this test's parent) as a `command`. */
function lockedBy(dir: string, command: string): void {
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: process.ppid, host: hostname(), startedAt: 1, command, token: 'abc' }), { mode: 0o600 });
}

const stack = testStack({ name: 'prod' });

describe("the daemon's token file", () => {
  it('is written at each grant, 0600, with the service as a hash; a backfill finds it while the daemon runs', () => {
    const dir = folder();
    const keeper = new TokenKeeper(dir, captureLogger().logger);
    keeper.keep(stack, 'token-one');
    keeper.keep(stack, 'token-two');
    const path = join(dir, TOKENS_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const text = readFileSync(path, 'utf8');
    expect(text).toContain('token-two');
    expect(text).not.toContain('token-one');
    // Neither the address nor the client id: the hash of both.
    expect(text).not.toContain(stack.baseUrl);
    expect(text).not.toContain(stack.auth.kind === 'client' ? stack.auth.clientId : 'never');

    expect(daemonToken(dir, stack)).toEqual({ daemon: undefined });
    lockedBy(dir, 'daemon');
    expect(daemonToken(dir, stack)).toMatchObject({ daemon: { pid: process.ppid, command: 'daemon' }, token: 'token-two' });
    // Another client id: not its token.
    const other = testStack({ name: 'prod', auth: { kind: 'client', clientId: 'someone-else', secret: 's', clientIdKey: 'clientID' } });
    expect(daemonToken(dir, other).token).toBeUndefined();
    // A folder held by a backfill is no daemon's.
    lockedBy(dir, 'backfill');
    expect(daemonToken(dir, stack)).toEqual({ daemon: undefined });
  });

  it('lives only while the daemon runs: removed at its stop, and a killed one\'s at the next start', () => {
    const dir = folder();
    const keeper = new TokenKeeper(dir, captureLogger().logger);
    keeper.keep(stack, 'token-one');
    keeper.close();
    expect(statSync(join(dir, TOKENS_FILE), { throwIfNoEntry: false })).toBeUndefined();
    keeper.keep(stack, 'after-stop');
    expect(statSync(join(dir, TOKENS_FILE), { throwIfNoEntry: false })).toBeUndefined();
    writeFileSync(join(dir, TOKENS_FILE), 'left by a kill -9', { mode: 0o600 });
    new TokenKeeper(dir, captureLogger().logger);
    expect(statSync(join(dir, TOKENS_FILE), { throwIfNoEntry: false })).toBeUndefined();
  });

  it('a file that does not read says so, never quoting it; a write that fails is logged once, with its code only', () => {
    const dir = folder();
    lockedBy(dir, 'daemon');
    writeFileSync(join(dir, TOKENS_FILE), '{"format":"cmdb-exporter-tokens","stacks":{"prod":{"token":"half-a-secr', { mode: 0o600 });
    const seen = daemonToken(dir, stack);
    expect(seen.problem).toBe(`${TOKENS_FILE} is not whole`);
    expect(JSON.stringify(seen)).not.toContain('half-a-secr');

    const log = captureLogger();
    const keeper = new TokenKeeper(join(dir, 'missing-folder'), log.logger);
    keeper.keep(stack, 'secret-token');
    keeper.keep(stack, 'secret-token-2');
    expect(log.lines().filter((l) => String(l.msg).includes('could not be kept'))).toHaveLength(1);
    expect(log.text()).not.toContain('secret-token');
  });
});
