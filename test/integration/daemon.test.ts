import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';
import { freePort, runDaemon, type Daemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'it-secret-Vb83kPq1';
let sim: SimulatorServer;
let tmp: string;
const running: Daemon[] = [];

beforeAll(async () => {
  sim = await startSimulator({ seed: 7, secret: SECRET });
  sim.scenario.finishIngestion('success');
  tmp = mkdtempSync(join(tmpdir(), 'cmdb-it-'));
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop('SIGKILL')));
  sim.clearFaults();
});

afterAll(async () => {
  await sim?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function envFor(port: number, extra: Record<string, string> = {}) {
  const state = sim.state();
  return {
    CMDB_BASE_URL: sim.url,
    CMDB_CLIENT_ID: sim.clientId,
    CMDB_SECRET: SECRET,
    CMDB_TRACK_ASSETS: state.trackedAssets.join(','),
    CMDB_TRACK_USERS: state.trackedUsers.join(','),
    EXPORTER_LISTEN_ADDRESS: `127.0.0.1:${port}`,
    LOG_LEVEL: 'debug',
    // The default budget (50 a minute) would spread the first poll over ~15 s; the simulator is local.
    CMDB_RATE_LIMIT_PER_MINUTE: '6000',
    CMDB_ACTION_JOBS_PER_MINUTE: '6000',
    ...extra,
  };
}

async function startDaemon(extra: Record<string, string> = {}, args: string[] = []) {
  const port = await freePort();
  const daemon = runDaemon(args, envFor(port, extra));
  running.push(daemon);
  const base = `http://127.0.0.1:${port}`;
  await waitFor('/healthz', async () => ((await fetch(`${base}/healthz`)).ok ? true : undefined), { gone: daemon.gone });
  return { daemon, base };
}

describe('the daemon against the simulator', () => {
  it('starts, turns ready, serves every catalogued family and keeps secrets out of logs and /metrics', async () => {
    // The license's answer is held until the test has seen /readyz say "starting", whatever the
    // machine's speed (the daemon answers /healthz before its first poll has answered).
    sim.addFault({ endpoint: 'license', hold: true, times: 1 });
    const { daemon, base } = await startDaemon();
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ status: 'starting', pending: expect.arrayContaining([{ stack: 'default', endpoint: 'license' }]) });
    sim.clearFaults();
    await waitFor('/readyz 200', async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), { gone: daemon.gone });
    // Ready once the lists answered; the per-id endpoints (Action jobs, change history) fill in after.
    // Saved queries need a configuration file (a list has no environment variable): test/golden and
    // test/e2e/queries.test.ts prove those families served. Families served only under a condition
    // (`only`, e.g. with --storage.path) are not expected here.
    const families = CATALOGUE.filter((f) => f.endpoint !== 'data_query' && f.endpoint !== 'data_metadata' && f.only === undefined);
    const served = (text: string) => families.every((f) => new RegExp(`^${f.name}(_bucket|_sum|_count)?[{ ]`, 'm').test(text));
    const metrics = await waitFor('every catalogued family', async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return served(text) ? text : undefined;
    }, { gone: daemon.gone });
    for (const f of families) expect(metrics, f.name).toMatch(new RegExp(`^${f.name}(_bucket|_sum|_count)?[{ ]`, 'm'));
    expect(metrics).toMatch(/^process_resident_memory_bytes /m);
    const landing = await (await fetch(`${base}/`)).text();
    const leaks = [SECRET, ...PLANTED_SECRETS, ...sim.issuedTokens()];
    for (const secret of leaks) {
      expect(metrics).not.toContain(secret);
      expect(landing).not.toContain(secret);
      expect(daemon.output()).not.toContain(secret);
    }
    expect(daemon.output()).toContain('"msg":"cmdb-exporter starting"');
  });

  it('exits 0 within its 10 s shutdown deadline on SIGTERM, a request hanging, with a final log line', async () => {
    // A license request that never answers by itself: the shutdown must not wait for it. Past its
    // deadline (10 s, on the daemon's own clock) the daemon would exit 1, "exiting anyway".
    sim.addFault({ endpoint: 'license', hold: true });
    const { daemon } = await startDaemon();
    await waitFor('the license request', async () => (sim.requests().some((r) => r.endpoint === 'license') ? true : undefined), { gone: daemon.gone });
    expect(await daemon.stop('SIGTERM')).toBe(0);
    expect(daemon.output()).toContain('"msg":"stopped"');
    expect(daemon.output()).not.toContain('shutdown deadline passed');
  });

  it('exits 0 on SIGINT too', async () => {
    const { daemon } = await startDaemon();
    expect(await daemon.stop('SIGINT')).toBe(0);
  });

  it('logs a failing endpoint once with what to do, over several failed polls, and the other endpoints stay up', async () => {
    sim.addFault({ endpoint: 'license', status: 503 });
    // The license polled every 10 s (the default is an hour: one poll would make "once" hold trivially).
    const file = join(tmp, 'license-10s.yaml');
    writeFileSync(file, 'defaults:\n  intervals: { license: 10s }\n  retries: { max: 0 }\n');
    const { daemon, base } = await startDaemon({}, ['--config.file', file]);
    await waitFor('/readyz 200', async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), { gone: daemon.gone });
    const polls = /^cmdb_poll_duration_seconds_count\{stack="default",group="license"\} (\d+)$/m;
    const metrics = await waitFor('three polls of the license', async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      return Number(polls.exec(text)?.[1] ?? 0) >= 3 ? text : undefined;
    }, { gone: daemon.gone });
    expect(sim.requests().filter((r) => r.endpoint === 'license').length).toBeGreaterThanOrEqual(3);
    expect(metrics).toContain('cmdb_endpoint_up{stack="default",endpoint="license"} 0');
    expect(metrics).toContain('cmdb_endpoint_up{stack="default",endpoint="metrics_data"} 1');
    const lines = daemon
      .output()
      .split('\n')
      .filter((l) => l.includes('"endpoint":"license"') && l.includes('"level":"warn"'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('503 Service Unavailable');
    expect(lines[0]).toContain('"hint":"the CMDB answered with a server error');
  });
});

describe('command line', () => {
  it('--check-config with a bad file exits 2 naming every bad key, without contacting anything', async () => {
    const file = join(tmp, 'bad.yaml');
    writeFileSync(file, 'stacks:\n  - name: a\n    baseUrl: ftp://x\n    clientId: c\n    secret: s\n    rateLimitPerMinte: 5\n');
    const before = sim.requests().length;
    const d = runDaemon(['--check-config', '--config', file], {});
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain('stacks[0].baseUrl');
    expect(d.output()).toContain('stacks[0].rateLimitPerMinte');
    expect(d.output()).toContain('did you mean "rateLimitPerMinute"?');
    expect(d.output()).not.toMatch(/\n\s+at /); // no stack trace
    expect(sim.requests().length).toBe(before);
  });

  it('--web.config.file with a mistake stops start-up with exit 2 naming the key, and --check-config checks it', async () => {
    const file = join(tmp, 'web.yml');
    writeFileSync(file, 'tls_server_config:\n  cert_file: server.crt\n  key_fiel: server.key\nbasic_auth_users:\n  alice: plaintext-Zq81\n');
    for (const args of [['--web.config.file', file], ['--check-config', '--web.config.file', file]]) {
      const d = runDaemon(args, envFor(9873));
      expect(await d.exited).toBe(2);
      expect(d.output()).toContain('tls_server_config.key_fiel: unknown key; did you mean "key_file"?');
      expect(d.output()).toContain('basic_auth_users.alice: must be a bcrypt hash');
      expect(d.output()).not.toContain('plaintext-Zq81');
    }
  });

  // An empty value once meant 0 (no limit) and 0x10 meant 16, silently.
  it.each(['many', '', '0x10', '1e3'])('--web.max-requests %j must be a whole number', async (value) => {
    const d = runDaemon(['--web.max-requests', value], envFor(9873));
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain('--web.max-requests must be a whole number');
  });

  it('--check-config with a good configuration exits 0', async () => {
    const d = runDaemon(['--check-config'], envFor(9873));
    expect(await d.exited).toBe(0);
    expect(d.output()).toContain('configuration OK: 1 stack(s) (default)');
  });

  it('--check-config checks saved queries without the CMDB: the example ones pass, a windowed operator exits 2 at its key', async () => {
    const good = join(tmp, 'queries-good.yaml');
    const example = (parse(readFileSync(new URL('../../config/exporter.example.yaml', import.meta.url), 'utf8')) as { stacks: Array<{ queries: unknown }> }).stacks[0]?.queries;
    writeFileSync(good, stringify({ stacks: [{ name: 'q', baseUrl: sim.url, token: 'tok-q-1234', queries: example }] }));
    const ok = runDaemon(['--check-config', '--config.file', good], {});
    expect(await ok.exited).toBe(0);
    expect(ok.output()).toContain('saved queries OK without the CMDB: 4');

    const bad = join(tmp, 'queries-bad.yaml');
    const windowed = [{ name: 'stale', table: 'asset', query: [[{ searchFieldName: 'Last_Discovered_Datetime', operator: 'not within past', value: '30 days' }]] }];
    writeFileSync(bad, stringify({ stacks: [{ name: 'q', baseUrl: sim.url, token: 'tok-q-1234', queries: windowed }] }));
    const refused = runDaemon(['--check-config', '--config.file', bad], {});
    expect(await refused.exited).toBe(2);
    expect(refused.output()).toContain('stacks[0].queries[0].query[0][0].operator: query "stale": operator "not within past" is refused');
    expect(refused.output()).toContain('operator "<" with a relative value such as "-30d"');
  });

  it('--config.check warns about a mistyped CMDB_* variable with a did-you-mean, and still says OK', async () => {
    const d = runDaemon(['--config.check'], { ...envFor(9873), CMDB_TRACK_ASSET: 'web-01' });
    expect(await d.exited).toBe(0);
    expect(d.output()).toContain('CMDB_TRACK_ASSET: unknown environment variable, ignored; did you mean "CMDB_TRACK_ASSETS"?');
    expect(d.output()).toContain('configuration OK');
  });

  it('names a mistyped variable in the same report as the problems it explains (CMDB_SECERT: the secret is missing)', async () => {
    for (const args of [['--check-config'], []]) {
      const d = runDaemon(args, { CMDB_BASE_URL: sim.url, CMDB_CLIENT_ID: 'demo-client', CMDB_SECERT: 'secret-Zk12' });
      expect(await d.exited).toBe(2);
      // One stream: a pattern over two lines holds only within one stream, whatever the load.
      const out = d.stderr();
      expect(out).toContain('invalid configuration (1 problem):');
      expect(out).toMatch(/CMDB_SECRET: CMDB_CLIENT_ID needs a secret[^\n]*\nperhaps behind them, variables the exporter does not read:\n {2}CMDB_SECERT: unknown environment variable, ignored; did you mean "CMDB_SECRET"\?/);
      expect(out).not.toContain('secret-Zk12');
    }
  });

  it('--config.check does not call a variable the file refers to as ${NAME} unknown, and still warns about a typo', async () => {
    const file = join(tmp, 'file-variables.yaml');
    writeFileSync(file, ['stacks:', '  - name: prod-us', `    baseUrl: ${sim.url}`, '    clientId: ${CMDB_ID_US:-exporter}', '    secret: ${CMDB_SECRET_US}', ''].join('\n'));
    const d = runDaemon(['--config.check', '--config.file', file], { CMDB_SECRET_US: 'sec-Qw81', CMDB_ID_US: 'exp', CMDB_TRACK_ASSET: 'web-01' });
    expect(await d.exited).toBe(0);
    expect(d.output()).toContain('configuration OK: 1 stack(s) (prod-us)');
    expect(d.output()).toContain('CMDB_TRACK_ASSET: unknown environment variable');
    expect(d.output()).not.toContain('CMDB_SECRET_US: unknown');
    expect(d.output()).not.toContain('CMDB_ID_US: unknown');
  });

  it.each([['-h'], ['--help']])('%s prints the help, listing the shared exporter flags and the silent level', async (flag) => {
    const d = runDaemon([flag], {});
    expect(await d.exited).toBe(0);
    for (const text of ['--config.file', '--config.check', '--web.telemetry-path', '--web.disable-exporter-metrics', 'trace|silent']) {
      expect(d.output()).toContain(text);
    }
  });

  it('-v prints the version', async () => {
    const d = runDaemon(['-v'], {});
    expect(await d.exited).toBe(0);
    expect(d.stdout()).toMatch(/^cmdb-exporter \d+\.\d+\.\d+ \(node v\d+/);
  });

  it('serves the metrics on --web.telemetry-path, without process metrics under --web.disable-exporter-metrics', async () => {
    const { base } = await startDaemon({}, ['--web.telemetry-path', '/probe/metrics', '--web.disable-exporter-metrics']);
    const res = await fetch(`${base}/probe/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('cmdb_exporter_build_info');
    expect(text).not.toContain('process_cpu_seconds_total');
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    expect(await (await fetch(`${base}/`)).text()).toContain('<a href="probe/metrics">/probe/metrics</a>');
  });

  it('--config.file is --config', async () => {
    const file = join(tmp, 'alias.yaml');
    writeFileSync(file, 'stacks:\n  - name: a\n    baseUrl: ftp://x\n    clientId: c\n    secret: s\n');
    const d = runDaemon(['--config.check', '--config.file', file], {});
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain('stacks[0].baseUrl');
  });

  it('--config and --config.file together are refused, as by backfill', async () => {
    const d = runDaemon(['--config.check', '--config', join(tmp, 'a.yaml'), '--config.file', join(tmp, 'b.yaml')], {});
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain('--config and --config.file are the same option; give one of them');
  });

  it('a bad configuration stops start-up with exit code 2 and names the key', async () => {
    const d = runDaemon([], { ...envFor(9873), CMDB_BASE_URL: 'not a url' });
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain('CMDB_BASE_URL');
  });

  it('--once prints the exposition and exits 0 when every endpoint succeeded, ending with one summary line', async () => {
    const d = runDaemon(['--once'], envFor(9873));
    expect(await d.exited).toBe(0);
    expect(d.stdout()).toContain('cmdb_assets{stack="default"}');
    // The summary is the last line of stderr; the exposition is stdout (their interleaving is the machine's).
    expect(d.stderr().trimEnd().split('\n').at(-1)).toMatch(/^--once: (\d+) of \1 endpoints ok, 0 failed, 1 stack, in \d+\.\ds$/);
  });

  it('--once exits 1 when an endpoint failed, and its summary line names it', async () => {
    sim.addFault({ endpoint: 'connector', status: 500 });
    const d = runDaemon(['--once'], envFor(9873));
    expect(await d.exited).toBe(1);
    expect(d.stdout()).toContain('cmdb_endpoint_up{stack="default",endpoint="connector"} 0');
    expect(d.stderr().trimEnd().split('\n').at(-1)).toMatch(/^--once: \d+ of \d+ endpoints ok, 1 failed \(default\/connector: 500\), 1 stack, in \d+\.\ds$/);
  });

  it.each([
    [['--version'], /^cmdb-exporter \d+\.\d+\.\d+/],
    [['--help'], /Usage: cmdb-exporter \[options\]/],
  ])('%j prints and exits 0', async (args, pattern) => {
    const d = runDaemon(args, {});
    expect(await d.exited).toBe(0);
    expect(d.stdout()).toMatch(pattern);
  });

  it.each([
    [['--web.external-url', 'cmdb-exporter:9873'], {}, '--web.external-url: must be an absolute http(s) URL'],
    [[], { EXPORTER_WEB_EXTERNAL_URL: 'http://user:pw@x:1' }, 'EXPORTER_WEB_EXTERNAL_URL: must not hold a user name or password'],
  ])('a bad external URL (%j %j) exits 2 naming the flag or variable', async (args, env, message) => {
    const d = runDaemon(args, { ...envFor(9873), ...env });
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain(message);
  });

  it('an unknown flag exits 2 with a pointer to --help', async () => {
    const d = runDaemon(['--no-such-flag'], {});
    expect(await d.exited).toBe(2);
    expect(d.output()).toContain('--help');
  });
});

describe('reload', () => {
  function writeConfig(file: string, extra = '') {
    const state = sim.state();
    writeFileSync(
      file,
      [
        'enableReload: true',
        'defaults: { rateLimitPerMinute: 6000 }',
        'stacks:',
        '  - name: one',
        `    baseUrl: ${sim.url}`,
        `    clientId: ${sim.clientId}`,
        '    secret: ${IT_SECRET}',
        `    track: { assets: ${JSON.stringify(state.trackedAssets)} }`,
        extra,
      ].join('\n'),
    );
  }

  it('SIGHUP applies a valid new file and rejects an invalid one, keeping the old configuration', async () => {
    const file = join(tmp, 'reload.yaml');
    writeConfig(file);
    const port = await freePort();
    const daemon = runDaemon(['--config', file, '--web.listen-address', `127.0.0.1:${port}`], { IT_SECRET: SECRET, LOG_LEVEL: 'info' });
    running.push(daemon);
    const base = `http://127.0.0.1:${port}`;
    await waitFor('ready', async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), { gone: daemon.gone });
    writeConfig(file, ['  - name: two', `    baseUrl: ${sim.url}`, `    clientId: ${sim.clientId}`, '    secret: ${IT_SECRET}'].join('\n'));
    daemon.child.kill('SIGHUP');
    await waitFor('stack two', async () => ((await (await fetch(`${base}/metrics`)).text()).includes('stack="two"') ? true : undefined), { gone: daemon.gone });
    writeFileSync(file, 'stacks:\n  - name: broken\n');
    daemon.child.kill('SIGHUP');
    await waitFor('rejection', async () => (daemon.output().includes('configuration reload rejected') ? true : undefined), { gone: daemon.gone });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('stack="one"');
    expect(metrics).toContain('stack="two"');
    expect(metrics).toContain('cmdb_config_last_reload_successful 0');
    expect(daemon.output()).toContain('stacks[0].baseUrl');
  });

  it('POST /-/reload reloads when enabled and reports a bad file with 400', async () => {
    const file = join(tmp, 'reload-http.yaml');
    writeConfig(file);
    const port = await freePort();
    const daemon = runDaemon(['--config', file, '--web.listen-address', `127.0.0.1:${port}`], { IT_SECRET: SECRET });
    running.push(daemon);
    const base = `http://127.0.0.1:${port}`;
    await waitFor('healthz', async () => ((await fetch(`${base}/healthz`)).ok ? true : undefined), { gone: daemon.gone });
    const ok = await fetch(`${base}/-/reload`, { method: 'POST' });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('"unchanged":1');
    writeFileSync(file, 'enableReload: true\nstacks: 3\n');
    const bad = await fetch(`${base}/-/reload`, { method: 'POST' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('stacks');
  });
});
