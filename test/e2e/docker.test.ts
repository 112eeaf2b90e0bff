/**
 * Container packaging, checked without a container engine (none is installed here): what the
 * Dockerfile and docker-compose.yml reference exists and reaches the build context, the compose
 * wiring matches the Prometheus config and the simulator, the Prometheus config passes promtool,
 * and the image's ENTRYPOINT and HEALTHCHECK commands work when run outside a container with the
 * same arguments and the compose file's environment, against the compose simulator's command.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { contextSources, execForm, finalStageEnv, healthcheckCommand, isIgnored, parseDockerfile, type Instruction } from './harness/dockerfile.js';
import { startExporter, waitUntilReady, type RunningExporter } from './harness/exporter.js';
import { runToCompletion, startProcess, stopAllAndCheck, type ManagedProcess } from './harness/processes.js';
import { baseEnv, freePort, http, makeTempDir, removeDir, REPO_ROOT, requireBuild, requirePart } from './harness/tools.js';

interface Service {
  build?: string | { context?: string; dockerfile?: string };
  image?: string;
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  secrets?: string[];
  networks?: { default?: { aliases?: string[] } };
  healthcheck?: { test?: string[] };
}
interface Compose {
  services: Record<string, Service>;
  secrets?: Record<string, { file?: string }>;
  volumes?: Record<string, unknown>;
}

const repo = (path: string) => resolve(REPO_ROOT, path);
const read = (path: string) => readFileSync(repo(path), 'utf8');
const composeText = read('docker-compose.yml');
const compose = parse(composeText) as Compose;
const instructions: Instruction[] = parseDockerfile(read('Dockerfile'));
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const exporterEnv = () => service('exporter').environment ?? {};
const secretFile = (name: string) => compose.secrets?.[name]?.file ?? '';

let simulator: ManagedProcess;
/** The image's state directory, outside a container: a temporary one. */
const stateDir = makeTempDir('docker-state');
let simulatorUrl: string;
let daemon: RunningExporter;

beforeAll(async () => {
  requireBuild();
  // The compose simulator's command, with its address moved to loopback and a free port.
  const { entrypoint = [], command = [] } = service('simulator');
  const args = command.map((a, i) => (command[i - 1] === '--host' ? '127.0.0.1' : command[i - 1] === '--port' ? '0' : a));
  simulator = startProcess('simulator', process.execPath, [...entrypoint.slice(1), ...args], { cwd: REPO_ROOT, env: baseEnv() });
  const line = await simulator.waitForLine('"listening on" line', (l) => /listening on http:\/\/\S+/.test(l), 20_000);
  simulatorUrl = /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? '';
});

afterAll(async () => {
  await stopAllAndCheck(() => removeDir(stateDir));
});

describe('Dockerfile', () => {
  it('is multi-stage, runs as non-root, exposes 9873 and runs node directly for ENTRYPOINT and HEALTHCHECK', () => {
    expect(instructions.filter((i) => i.keyword === 'FROM').length).toBeGreaterThan(1);
    const user = instructions.filter((i) => i.keyword === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
    expect(instructions.filter((i) => i.keyword === 'EXPOSE').map((i) => i.args)).toEqual(['9873']);
    expect(healthcheckCommand(instructions)).toEqual(['node', 'dist/healthcheck.js']);
    expect(execForm(instructions.find((i) => i.keyword === 'ENTRYPOINT')?.args ?? '')).toEqual(['node', 'dist/main.js']);
  });

  it('declares the state directory: EXPORTER_STORAGE_PATH, made for the user it runs as, and a VOLUME there', () => {
    const path = finalStageEnv(instructions).EXPORTER_STORAGE_PATH;
    expect(path).toBe('/var/lib/cmdb-exporter');
    const volumes = instructions.filter((i) => i.keyword === 'VOLUME').map((i) => execForm(i.args));
    expect(volumes).toEqual([[path]]);
    const userAt = instructions.findLastIndex((i) => i.keyword === 'USER');
    const user = instructions[userAt]?.args;
    const made = instructions.findIndex((i) => i.keyword === 'RUN' && i.args.includes(`mkdir -p ${path}`) && i.args.includes(`chown ${user}:${user} ${path}`));
    expect(made, 'made and given to the user before USER').toBeGreaterThan(instructions.findLastIndex((i) => i.keyword === 'FROM'));
    expect(made).toBeLessThan(userAt);
  });

  it('copies only sources that exist in the build context and that .dockerignore lets through', () => {
    const ignore = read('.dockerignore');
    const sources = contextSources(instructions);
    expect(sources.map((s) => s.source)).toEqual(expect.arrayContaining(['package-lock.json', 'src']));
    const problems = sources.flatMap(({ source, line }) => [
      ...(existsSync(repo(source)) ? [] : [`line ${line}: ${source} does not exist`]),
      ...(isIgnored(ignore, source) ? [`line ${line}: ${source} is excluded by .dockerignore`] : []),
    ]);
    expect(problems).toEqual([]);
  });

  it('keeps the demo secret, tests and local builds out of the build context', () => {
    const ignore = read('.dockerignore');
    for (const path of [secretFile('cmdb_secret'), 'node_modules', 'dist', '.git', 'test']) expect(isIgnored(ignore, path), path).toBe(true);
  });
});

describe('docker-compose.yml', () => {
  it('references only files and directories that exist: build context, Dockerfile, bind mounts, secrets', () => {
    const paths: string[] = [];
    for (const [name, s] of Object.entries(compose.services)) {
      if (s.build !== undefined) {
        const context = typeof s.build === 'string' ? s.build : (s.build.context ?? '.');
        const dockerfile = typeof s.build === 'string' ? 'Dockerfile' : (s.build.dockerfile ?? 'Dockerfile');
        paths.push(context, join(context, dockerfile));
      }
      for (const volume of s.volumes ?? []) {
        const [source = ''] = volume.split(':');
        if (source.startsWith('.') || source.startsWith('/')) paths.push(source);
        else expect(compose.volumes, `${name}: named volume ${source} is declared`).toHaveProperty(source);
      }
      for (const secret of s.secrets ?? []) paths.push(secretFile(secret) || `<secret ${secret} without a file>`);
    }
    expect(paths.length).toBeGreaterThan(6);
    expect(paths.filter((p) => !existsSync(repo(p)))).toEqual([]);
  });

  it('mounts the Prometheus config and the Grafana provisioning and dashboards where they are expected, on pinned images', () => {
    expect(service('prometheus').image).toMatch(/^prom\/prometheus:v[23]\.\d+\.\d+$/);
    expect(service('grafana').image).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    expect(service('prometheus').volumes).toContain('./config/prometheus:/etc/prometheus:ro');
    expect(service('grafana').volumes).toEqual(
      expect.arrayContaining(['./grafana/provisioning:/etc/grafana/provisioning:ro', './grafana/dashboards:/var/lib/grafana/dashboards:ro']),
    );
    // The home dashboard is named by its path inside the container: it must be one of the mounted files.
    const home = service('grafana').environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH ?? '';
    expect(home.startsWith('/var/lib/grafana/dashboards/'), home).toBe(true);
    expect(statSync(repo(home.replace('/var/lib/grafana/dashboards/', 'grafana/dashboards/'))).isFile()).toBe(true);
  });

  it('lets Prometheus reach the exporter as cmdb-exporter:9873, the target of config/prometheus/prometheus.yml', () => {
    const prom = parse(read('config/prometheus/prometheus.yml')) as { scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }> };
    const targets = prom.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    expect(targets).toContain('cmdb-exporter:9873');
    expect(service('exporter').networks?.default?.aliases).toContain('cmdb-exporter');
    // The image listens on :9873 (Dockerfile ENV) unless the compose file moves it.
    expect(exporterEnv().EXPORTER_LISTEN_ADDRESS ?? finalStageEnv(instructions).EXPORTER_LISTEN_ADDRESS).toBe(':9873');
  });

  it("keeps the exporter's state in a named volume at the image's EXPORTER_STORAGE_PATH", () => {
    const path = exporterEnv().EXPORTER_STORAGE_PATH ?? finalStageEnv(instructions).EXPORTER_STORAGE_PATH;
    const mounts = (service('exporter').volumes ?? []).map((v) => v.split(':'));
    const state = mounts.find(([, target]) => target === path);
    expect(state, `a volume at ${path}`).toBeDefined();
    expect(compose.volumes).toHaveProperty(state?.[0] ?? '');
  });

  it('gives the exporter its secret only through a compose secret file, never in the compose file', () => {
    const env = exporterEnv();
    expect(service('exporter').secrets).toEqual(['cmdb_secret']);
    expect(env.CMDB_SECRET_FILE).toBe('/run/secrets/cmdb_secret');
    expect(Object.keys(env).filter((k) => ['CMDB_SECRET', 'CMDB_TOKEN'].includes(k))).toEqual([]);
    const secret = read(secretFile('cmdb_secret')).replace(/\r?\n$/, '');
    expect(secret.length).toBeGreaterThan(0);
    expect(composeText).not.toContain(secret);
  });

  it("points the exporter at the simulator service with the simulator's demo credentials and tracked names", async () => {
    const sim = service('simulator');
    const env = exporterEnv();
    const port = sim.command?.[sim.command.indexOf('--port') + 1];
    expect(sim.command?.[sim.command.indexOf('--host') + 1]).toBe('0.0.0.0');
    expect(env.CMDB_BASE_URL).toBe(`http://simulator:${port}`);
    const state = (await http(`${simulatorUrl}/_admin/state`)).text;
    const { clientId, trackedAssets, trackedUsers } = JSON.parse(state) as { clientId: string; trackedAssets: string[]; trackedUsers: string[] };
    expect(env.CMDB_CLIENT_ID).toBe(clientId);
    expect(env.CMDB_TRACK_ASSETS?.split(',')).toEqual(trackedAssets);
    expect(env.CMDB_TRACK_USERS?.split(',')).toEqual(trackedUsers);
    expect(read(secretFile('cmdb_secret')).replace(/\r?\n$/, '')).toBe('demo-secret');
  });

  it("has a simulator healthcheck that passes against the simulator's own port", async () => {
    const test = service('simulator').healthcheck?.test ?? [];
    expect(test.slice(0, 2)).toEqual(['CMD', 'node']);
    const port = new URL(simulatorUrl).port;
    const args = test.slice(2).map((a) => a.replace('127.0.0.1:8080', `127.0.0.1:${port}`));
    const result = await runToCompletion(process.execPath, args, { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 15_000 });
    expect(result.code).toBe(0);
  });

  it('the Prometheus config it mounts passes promtool check config (rule files included)', async () => {
    const promtool = requirePart('promtool');
    const result = await runToCompletion(promtool, ['check', 'config', 'config/prometheus/prometheus.yml'], { cwd: REPO_ROOT, env: baseEnv(), timeoutMs: 30_000 });
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toContain('SUCCESS: 2 rule files found');
  });
});

describe("the image's commands outside a container", () => {
  /** The exporter's compose environment, with the secret file, the state directory and the simulator on this machine. */
  const localEnv = () => ({
    ...finalStageEnv(instructions),
    ...exporterEnv(),
    CMDB_BASE_URL: simulatorUrl,
    CMDB_SECRET_FILE: repo(secretFile('cmdb_secret')),
    EXPORTER_LISTEN_ADDRESS: '127.0.0.1:0',
    EXPORTER_STORAGE_PATH: stateDir,
  });

  it('the compose environment is a valid configuration (--check-config)', async () => {
    const result = await runToCompletion(process.execPath, ['dist/main.js', '--check-config'], { cwd: REPO_ROOT, env: baseEnv(localEnv()), timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('configuration OK: 1 stack(s) (default)');
  });

  it('ENTRYPOINT starts the daemon: /healthz answers 200 and every endpoint of the compose environment polls', async () => {
    const entrypoint = execForm(instructions.find((i) => i.keyword === 'ENTRYPOINT')?.args ?? '') ?? [];
    daemon = await startExporter({ name: 'entrypoint', argv: entrypoint, env: localEnv() });
    const health = await http(`${daemon.url}/healthz`);
    expect(health.status).toBe(200);
    // The compose environment keeps the default pace of Action job fetches (one every 2 s).
    await waitUntilReady(daemon, 90_000);
    const metrics = (await http(`${daemon.url}/metrics`)).text;
    expect(metrics).toContain('cmdb_endpoint_up{stack="default",endpoint="user_change"} 1');
  });

  it('HEALTHCHECK exits 0 against the running daemon and 1 when nothing listens', async () => {
    expect(daemon, 'the ENTRYPOINT test started the daemon').toBeDefined();
    const [command, ...args] = healthcheckCommand(instructions) ?? [];
    expect(command).toBe('node');
    const run = (port: number) =>
      runToCompletion(process.execPath, args, { cwd: REPO_ROOT, env: baseEnv({ EXPORTER_LISTEN_ADDRESS: `127.0.0.1:${port}` }), timeoutMs: 15_000 });
    expect((await run(daemon.port)).code).toBe(0);
    expect((await run(await freePort())).code).toBe(1);
  });

  it('SIGTERM makes the daemon exit 0 within its 10 s shutdown deadline', async () => {
    expect(daemon, 'the ENTRYPOINT test started the daemon').toBeDefined();
    // Generous before the SIGKILL: the deadline is the daemon's own (10 s on its clock; past it, it
    // exits 1 "exiting anyway"), not this process's view of the time on a loaded machine.
    const stopped = await daemon.proc.stop(60_000);
    expect(stopped).toMatchObject({ code: 0, signal: null, killed: false });
    expect(daemon.proc.output()).toContain('"msg":"stopped"');
    expect(daemon.proc.output()).not.toContain('shutdown deadline passed');
    // It kept its state where the image says.
    expect(existsSync(join(stateDir, 'stacks', 'default.json.gz'))).toBe(true);
  });
});
