/**
 * What the npm package holds, from `npm pack --dry-run` (no build, no tarball): the license, the
 * example configuration, the alerting rules and the Grafana dashboards beside the daemon, so that a
 * global install has everything the README points to. And a tarball made by `npm pack` in the
 * working tree is never committed.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt, the license text verbatim. */
const APACHE_2_0_SHA256 = 'cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30';
let packed: string[];

beforeAll(async () => {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts', '--loglevel', 'error'], { cwd: ROOT, env, timeout: 120_000, maxBuffer: 16 << 20 });
  const [report] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>;
  packed = (report?.files ?? []).map((f) => f.path);
}, 150_000);

describe('the npm package', () => {
  it('holds the Apache License 2.0, verbatim, as package.json and the README say', () => {
    expect(JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')).license).toBe('Apache-2.0');
    expect(createHash('sha256').update(readFileSync(`${ROOT}LICENSE`)).digest('hex')).toBe(APACHE_2_0_SHA256);
    expect(packed).toContain('LICENSE');
  });

  it('holds the example configuration, the systemd unit, the alerting and recording rules, the Alertmanager configuration, every dashboard and the monitoring mixin', () => {
    const dashboards = readdirSync(`${ROOT}grafana/dashboards`).filter((f) => f.endsWith('.json')).map((f) => `grafana/dashboards/${f}`);
    expect(dashboards.length).toBeGreaterThan(0);
    for (const file of [
      'config/exporter.example.yaml',
      'deploy/systemd/cmdb-exporter.service',
      'deploy/systemd/exporter.yaml',
      'config/prometheus/cmdb-alerts.yml',
      'config/prometheus/cmdb-rules.yml',
      'config/alertmanager/alertmanager.yml',
      'config/alertmanager/cmdb.tmpl',
      'mixin/mixin.libsonnet',
      'mixin/jsonnetfile.json',
      ...dashboards,
    ]) {
      expect(packed, file).toContain(file);
    }
  });

  it('leaves out the tests, the sources and the promtool unit tests of the rules', () => {
    expect(packed.filter((f) => /^(test|src|bench|scripts)\//.test(f) || f.startsWith('config/prometheus/tests/'))).toEqual([]);
  });

  it('is not committed by accident: *.tgz is ignored by git', async () => {
    await expect(run('git', ['check-ignore', '-q', 'cmdb-exporter-0.1.0.tgz'], { cwd: ROOT })).resolves.toBeDefined();
  });
});
