/**
 * The compose demo's wiring, checked without a container engine: what docker-compose.yml references
 * exists, it matches the Prometheus config and the simulator, and the Prometheus config it mounts
 * passes promtool. The image itself is built and run, with the compose file's simulator service and
 * exporter environment, by `npm run test:image` (test/image/image.test.ts).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runToCompletion, startProcess, stopAllAndCheck, type ManagedProcess } from './harness/processes.js';
import { baseEnv, http, REPO_ROOT, requireBuild, requirePart } from './harness/tools.js';

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
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const exporterEnv = () => service('exporter').environment ?? {};
const secretFile = (name: string) => compose.secrets?.[name]?.file ?? '';

let simulator: ManagedProcess;
let simulatorUrl: string;

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
  await stopAllAndCheck();
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
    // That the image listens on 9873 and keeps its state where the compose file mounts its volume:
    // test/image/image.test.ts, from the built image's configuration.
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
