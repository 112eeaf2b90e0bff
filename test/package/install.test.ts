/**
 * Installable as a command: `npm pack` (its prepack script builds dist/), then a global install of the
 * tarball into a temporary prefix, must put a working `cmdb-exporter` on PATH. Dependencies come from
 * npm's cache first (--prefer-offline); the registry is only asked for what the cache lacks.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let tmp: string;
let bin: string;
let prefix: string;

/** The environment without npm's own npm_* variables (an outer `npm test` sets them). */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return { ...env, ...extra };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'cmdb-pack-'));
  const npmOpts = { cwd: ROOT, env: cleanEnv(), timeout: 240_000, maxBuffer: 16 << 20 };
  await run('npm', ['pack', '--pack-destination', tmp, '--loglevel', 'warn'], npmOpts);
  const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
  if (!tgz) throw new Error(`npm pack wrote no tarball into ${tmp}`);
  prefix = join(tmp, 'prefix');
  await run(
    'npm',
    ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel', 'warn', join(tmp, tgz)],
    { ...npmOpts, cwd: tmp },
  );
  bin = join(prefix, 'bin');
}, 300_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the packed package, installed globally', () => {
  it('puts cmdb-exporter on PATH and it prints its version', async () => {
    const { stdout } = await run('cmdb-exporter', ['--version'], { cwd: tmp, env: cleanEnv({ PATH: `${bin}:${process.env.PATH}` }) });
    expect(stdout).toMatch(/^cmdb-exporter \d+\.\d+\.\d+ \(node v\d+/);
  });

  it('checks a small configuration with --check-config', async () => {
    const secret = join(tmp, 'secret');
    writeFileSync(secret, 'pack-test-secret\n');
    const config = join(tmp, 'exporter.yaml');
    writeFileSync(config, `stacks:\n  - name: lab\n    baseUrl: http://127.0.0.1:1\n    clientId: exporter\n    secretFile: ${secret}\n`);
    const { stdout } = await run('cmdb-exporter', ['--check-config', '--config', config], { cwd: tmp, env: cleanEnv({ PATH: `${bin}:${process.env.PATH}` }) });
    expect(stdout).toContain('configuration OK: 1 stack(s) (lab)');
    expect(stdout).not.toContain('pack-test-secret');
  });

  it('installs the example configuration, the rules and the dashboards beside the command', () => {
    // Where the README sends a user after a global install: $(npm prefix -g)/lib/node_modules/cmdb-exporter/.
    const pkg = join(prefix, 'lib', 'node_modules', 'cmdb-exporter');
    for (const file of ['LICENSE', 'config/exporter.example.yaml', 'config/prometheus/cmdb-alerts.yml', 'config/prometheus/cmdb-rules.yml', 'grafana/dashboards/cmdb-overview.json']) {
      expect(existsSync(join(pkg, file)), file).toBe(true);
    }
  });

  it('rejects a bad configuration with exit code 2', async () => {
    const config = join(tmp, 'bad.yaml');
    writeFileSync(config, 'stacks:\n  - name: lab\n    baseUrl: ftp://x\n    token: t\n');
    const failed = await run('cmdb-exporter', ['--check-config', '--config', config], { cwd: tmp, env: cleanEnv({ PATH: `${bin}:${process.env.PATH}` }) }).then(
      () => undefined,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain('stacks[0].baseUrl');
  });
});
