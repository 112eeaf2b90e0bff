/**
 * deploy/systemd/cmdb-exporter.service: `systemd-analyze verify` and the offline security review on
 * it, and the configuration it ships read through $CREDENTIALS_DIRECTORY as systemd would set it.
 *
 * `verify` checks that the ExecStart= command exists. The unit names it without a directory, so that
 * systemd finds it in its search path (/usr/local/bin, /usr/bin, …) wherever the README's
 * `npm install --global` put it; this machine has not installed it, so the test verifies a copy whose
 * ExecStart= is this Node.js executable, checks the original line apart, and checks that the
 * directory npm installs global commands into is one systemd searches.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { part } from '../../scripts/parts/index.js';
import { runDaemon } from '../helpers/daemon.js';

const run = promisify(execFile);
const DIR = fileURLToPath(new URL('../../deploy/systemd/', import.meta.url));
const UNIT = readFileSync(join(DIR, 'cmdb-exporter.service'), 'utf8');
const COMMAND = 'cmdb-exporter';
let tmp: string;
let copy: string;

async function systemdAnalyze(args: string[]) {
  try {
    return await run(part('systemd-analyze'), args, { timeout: 60_000 });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    throw new Error(`systemd-analyze ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

function directives(name: string): string[] {
  return [...UNIT.matchAll(new RegExp(`^${name}=(.*)$`, 'gm'))].map((m) => m[1] ?? '');
}

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'cmdb-systemd-'));
  copy = join(tmp, 'cmdb-exporter.service');
  writeFileSync(copy, UNIT.replace(`\nExecStart=${COMMAND} `, `\nExecStart=${process.execPath} `));
  if (readFileSync(copy, 'utf8') === UNIT) throw new Error(`ExecStart= of the unit does not start with ${COMMAND}`);
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('deploy/systemd/cmdb-exporter.service', () => {
  it('passes systemd-analyze verify without a warning', async () => {
    const { stdout, stderr } = await systemdAnalyze(['verify', copy]);
    expect(`${stdout}${stderr}`.trim()).toBe('');
  });

  it('scores as well sandboxed in the offline security review (exposure ≤ 2.0 of 10)', async () => {
    const { stdout } = await systemdAnalyze(['security', '--offline=true', '--no-pager', copy]);
    const score = Number(/Overall exposure level for [^:]+: ([\d.]+)/.exec(stdout)?.[1]);
    expect(score).toBeLessThanOrEqual(2);
  });

  it('starts the installed command, reloads with SIGHUP and runs under a dynamic user with the secret as a credential', () => {
    expect(directives('ExecStart')).toEqual([`${COMMAND} --config /etc/cmdb-exporter/exporter.yaml --storage.path /var/lib/cmdb-exporter`]);
    expect(directives('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(directives('DynamicUser')).toEqual(['yes']);
    expect(directives('LoadCredential')).toEqual(['cmdb_secret:/etc/cmdb-exporter/cmdb_secret']);
    for (const d of ['NoNewPrivileges', 'ProtectHome', 'PrivateTmp', 'PrivateDevices']) expect(directives(d), d).toEqual(['yes']);
    expect(directives('ProtectSystem')).toEqual(['strict']);
    expect(directives('SystemCallFilter')).toContain('@system-service');
    expect(directives('RestrictAddressFamilies')).toEqual(['AF_INET AF_INET6 AF_UNIX']);
    // V8's JIT needs W+X memory: this protection would crash Node.js at start-up.
    expect(directives('MemoryDenyWriteExecute')).toEqual([]);
  });

  it('keeps the state in the directory systemd makes for it, readable by the service alone', () => {
    // StateDirectory=NAME is /var/lib/NAME (a link into /var/lib/private with DynamicUser=yes).
    expect(directives('StateDirectory')).toEqual(['cmdb-exporter']);
    expect(directives('StateDirectoryMode')).toEqual(['0700']);
    const path = /--storage\.path (\S+)/.exec(directives('ExecStart')[0] ?? '')?.[1];
    expect(path).toBe(`/var/lib/${directives('StateDirectory')[0]}`);
  });

  // The README installs with `npm install --global`, which puts the command in $(npm prefix -g)/bin:
  // /usr/local/bin with Debian's npm, /usr/bin with Node.js from nodejs.org or NodeSource (this machine).
  it('starts the command from where `npm install --global` puts it', async () => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
    // The machine's own node and npm, as a user installing by the README has them: not a Node.js
    // from a package's node_modules/.bin put first on PATH (CI runs the tests again under Node 24
    // that way, and npm's global prefix follows the node that runs it).
    env.PATH = (env.PATH ?? '').split(':').filter((dir) => !dir.includes('node_modules')).join(':');
    const globalBin = join((await run('npm', ['prefix', '--global'], { env })).stdout.trim(), 'bin');
    const [command] = (directives('ExecStart')[0] ?? '').split(' ');
    if (command?.startsWith('/')) {
      expect(command).toBe(join(globalBin, COMMAND));
    } else {
      expect(command).toBe(COMMAND);
      const searched = (await run('systemd-path', ['search-binaries-default'])).stdout.trim().split(':');
      expect(searched).toContain(globalBin);
    }
  });

  it('ships an exporter.yaml that reads the credential from $CREDENTIALS_DIRECTORY', async () => {
    const creds = join(tmp, 'credentials');
    const secretValue = 'systemd-cred-secret-9Xw';
    mkdirSync(creds);
    writeFileSync(join(creds, 'cmdb_secret'), `${secretValue}\n`);
    const d = runDaemon(['--check-config', '--config', join(DIR, 'exporter.yaml')], { CREDENTIALS_DIRECTORY: creds });
    expect(await d.exited).toBe(0);
    expect(d.output()).toContain('configuration OK: 1 stack(s) (prod); listen :9873');
    expect(d.output()).not.toContain(secretValue);

    const missing = runDaemon(['--check-config', '--config', join(DIR, 'exporter.yaml')], {});
    expect(await missing.exited).toBe(2);
    expect(missing.output()).toContain('environment variable CREDENTIALS_DIRECTORY is not set');
  });
});
