/**
 * End to end with --web.config.file: the BUILT exporter serves TLS with basic auth from a
 * web-config.yml written as for node_exporter, and a real Prometheus scrapes it over https with
 * basic_auth and tls_config.ca_file (the target is up, the data arrives). A second job with a
 * wrong password stays down with 401; `curl --cacert` gets 200, and plain HTTP is refused.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { makeCa, makeCert } from '../helpers/certs.js';
import { FAST_INTERVALS, startExporter, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { runToCompletion, stopAllAndCheck } from './harness/processes.js';
import { JOB, startPrometheus, type RunningPrometheus } from './harness/prometheus.js';
import { baseEnv, makeTempDir, removeDir, REPO_ROOT, requirePart } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

const USER = 'prometheus';
const PASSWORD = `scrape-${randomBytes(8).toString('hex')}`;
const WRONG_JOB = 'wrong-password';

let dir: string | undefined;
let sim: SimulatorServer;
let exporter: RunningExporter;
let prometheus: RunningPrometheus;

beforeAll(async () => {
  requirePart('prometheus');
  dir = makeTempDir('tls');
  makeCa(dir);
  makeCert(dir, 'server');
  // As node_exporter's docs show it: relative file names, a $2y$ hash as htpasswd -B writes it.
  const hash = bcrypt.hashSync(PASSWORD, 10).replace(/^\$2b\$/, '$2y$');
  writeFileSync(
    join(dir, 'web-config.yml'),
    `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS12\nbasic_auth_users:\n  ${USER}: ${hash}\n`,
  );
  sim = await startSimulator({ live: false });
  const state = sim.state();
  const configFile = writeExporterConfig(dir, {
    defaults: { rateLimitPerMinute: 6000, intervals: FAST_INTERVALS, track: { assets: state.trackedAssets, users: state.trackedUsers } },
  });
  exporter = await startExporter({
    args: ['--config', configFile, '--web.config.file', join(dir, 'web-config.yml')],
    env: { CMDB_BASE_URL: sim.url, CMDB_CLIENT_ID: sim.clientId, CMDB_SECRET: sim.secret, CMDB_STACK: 'tls' },
  });
  const target = `127.0.0.1:${exporter.port}`;
  const tls = { ca_file: join(dir, 'ca.crt') };
  prometheus = await startPrometheus({
    dir,
    target,
    ruleFiles: new Map(),
    scrape: { scheme: 'https', basic_auth: { username: USER, password: PASSWORD }, tls_config: tls },
    extraJobs: [
      { job_name: WRONG_JOB, scheme: 'https', basic_auth: { username: USER, password: 'not-it' }, tls_config: tls, static_configs: [{ targets: [target] }] },
    ],
  });
});

afterAll(async () => {
  await stopAllAndCheck(async () => {
    await sim?.close();
    removeDir(dir);
  });
});

function curl(args: string[]) {
  return runToCompletion('curl', ['--silent', '--show-error', '--max-time', '10', ...args], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 20_000 });
}

describe('a real Prometheus scrapes the exporter over TLS with basic auth', () => {
  it('the target is up and the CMDB data arrives', async () => {
    expect(exporter.url).toMatch(/^https:/);
    const up = await waitFor(
      'cmdb_endpoint_up of the TLS exporter in Prometheus',
      async () => {
        const series = await prometheus.api.query(`cmdb_endpoint_up{job="${JOB}",endpoint="license"}`);
        return series.length === 1 ? done(series) : notYet(await prometheus.api.targets());
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(up[0]?.value[1]).toBe('1');
    const target = (await prometheus.api.targets()).find((t) => t.labels.job === JOB);
    expect(target?.health).toBe('up');
    expect(target?.scrapeUrl).toMatch(/^https:\/\//);
  });

  it('the job with a wrong password is down with 401', async () => {
    const target = await waitFor(
      'the wrong-password target to be scraped',
      async () => {
        const t = (await prometheus.api.targets()).find((x) => x.labels.job === WRONG_JOB);
        return t && t.health !== 'unknown' ? done(t) : notYet(t);
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    expect(target.health).toBe('down');
    expect(target.lastError).toMatch(/401/);
  });

  it('curl --cacert with the password gets 200; a wrong password 401; plain HTTP is refused', async () => {
    const cacert = join(dir ?? '', 'ca.crt');
    const ok = await curl(['--cacert', cacert, '-u', `${USER}:${PASSWORD}`, '-o', '/dev/null', '-w', '%{http_code}', `https://127.0.0.1:${exporter.port}/metrics`]);
    expect(ok.stdout).toBe('200');
    const wrong = await curl(['--cacert', cacert, '-u', `${USER}:nope`, '-o', '/dev/null', '-w', '%{http_code}', `https://127.0.0.1:${exporter.port}/metrics`]);
    expect(wrong.stdout).toBe('401');
    const plain = await curl(['-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.1:${exporter.port}/metrics`]);
    expect(plain.code).not.toBe(0);
    expect(plain.stdout).toBe('000');
  });

  it("the container health check (dist/healthcheck.js) passes against the TLS port without the password", async () => {
    const check = await runToCompletion(process.execPath, ['dist/healthcheck.js'], {
      cwd: REPO_ROOT,
      env: baseEnv({ EXPORTER_LISTEN_ADDRESS: `127.0.0.1:${exporter.port}` }),
      timeoutMs: 20_000,
    });
    expect(check.code).toBe(0);
    // And it still fails where nothing listens.
    const nothing = await runToCompletion(process.execPath, ['dist/healthcheck.js'], {
      cwd: REPO_ROOT,
      env: baseEnv({ EXPORTER_LISTEN_ADDRESS: '127.0.0.1:1' }),
      timeoutMs: 20_000,
    });
    expect(nothing.code).toBe(1);
  });

  it('no password reaches the exporter log', () => {
    expect(exporter.proc.lines('both').join('\n')).not.toContain(PASSWORD);
  });
});
