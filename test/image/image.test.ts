/**
 * The container image, built and run for real (`npm run test:image`, as root, with Debian's buildah
 * and debootstrap): the repository's Dockerfile built with buildah FROM a base made here (Debian
 * bookworm and Node.js 24: test/image/harness/base.ts; no image registry is reachable), then the
 * image run as `docker run` and Compose run it: compose's simulator service, and the exporter with
 * the image's own ENTRYPOINT, CMD, USER, WORKDIR and ENV (read from the built image, not copied
 * from the Dockerfile) and the compose file's environment, secret and state volume; its
 * HEALTHCHECK, run in the container; and `docker stop`. A wrong base, a failing
 * `npm ci --omit=dev` or a file missing from dist/ fails here.
 */
import { chmodSync, chownSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { listeningUrl, waitUntilReady } from '../helpers/exporter.js';
import { stopAllAndCheck } from '../e2e/harness/processes.js';
import { freePort, http, makeTempDir, onFreePort, removeDir, REPO_ROOT } from '../e2e/harness/tools.js';
import { ensureBaseImage, NODE, requireImageTools } from './harness/base.js';
import {
  buildah,
  buildImage,
  ContainerProcess,
  containerCommand,
  envMap,
  fromImage,
  inspectImage,
  mountOverVolume,
  removeRuns,
  runContainer,
  runImage,
  runIn,
  type ImageConfig,
  type RunOptions,
} from './harness/buildah.js';

interface Service {
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  secrets?: string[];
  healthcheck?: { test?: string[] };
}
const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service>; secrets: Record<string, { file: string }> };
const exporterService = compose.services.exporter!;
const simulatorService = compose.services.simulator!;
/** Where Compose mounts a secret: /run/secrets/<name>. */
const secretMounts = (exporterService.secrets ?? []).map((name) => `${join(REPO_ROOT, compose.secrets[name]!.file)}:/run/secrets/${name}:ro`);

const image = runImage();
let config: ImageConfig;
/** The image's own environment, as `docker run` starts a container with it. */
let imageEnv: Record<string, string>;
/** The image's settings for a run, with `env` on top of the image's environment. */
const asImageRuns = (env: Record<string, string> = {}, volumes: string[] = []): RunOptions => ({
  user: config.User ?? '',
  workdir: config.WorkingDir ?? '',
  env: { ...imageEnv, ...env },
  volumes,
});

/** The compose exporter's state volume, here a folder of the host given to the image's user as Docker gives a new volume. */
const stateDir = makeTempDir('image-state');
let simulator: ContainerProcess | undefined;
let simulatorUrl = '';
let simulatorContainer = '';
let exporter: ContainerProcess | undefined;
let exporterUrl = '';
let exporterEnv: Record<string, string> = {};
let exporterContainer = '';

beforeAll(async () => {
  requireImageTools();
  await removeRuns('gone');
  let started = Date.now();
  const base = await ensureBaseImage();
  console.log(`base ${base}: ${((Date.now() - started) / 1000).toFixed(0)} s`);
  started = Date.now();
  await buildImage({ context: REPO_ROOT, base, tag: image });
  const size = (await buildah(['images', '--format', '{{.Size}}', image])).trim();
  console.log(`image ${image} built: ${((Date.now() - started) / 1000).toFixed(0)} s, ${size}`);
  config = await inspectImage(image);
  imageEnv = envMap(config.Env);
  // Compose's simulator service: its entrypoint and command, on loopback and a port of its choosing.
  const { entrypoint = [], command = [] } = simulatorService;
  const args = command.map((a, i) => (command[i - 1] === '--host' ? '127.0.0.1' : command[i - 1] === '--port' ? '0' : a));
  simulatorContainer = await fromImage(image, runContainer('simulator'));
  simulator = new ContainerProcess('simulator', simulatorContainer, [...entrypoint, ...args], asImageRuns());
  const line = await simulator.proc.waitForLine('"listening on" line', (l) => /listening on http:\/\/\S+/.test(l), 120_000);
  simulatorUrl = /listening on (http:\/\/\S+)/.exec(line)?.[1] ?? '';
});

afterAll(async () => {
  const stopped = [await simulator?.stop(), await exporter?.stop()];
  await stopAllAndCheck(async () => {
    await removeRuns('this');
    removeDir(stateDir);
  });
  expect(stopped.filter((s) => s?.killed).map((s) => s?.name)).toEqual([]);
});

/**
 * Runs `command` in a container of the image kept for such one-off commands (each container is a
 * whole copy of the image's files with vfs), as the image's user, in its workdir, with its environment.
 */
let probe: string | undefined;
async function runOnce(command: string[], env: Record<string, string> = {}) {
  probe ??= await fromImage(image, runContainer('probe'));
  return runIn(probe, command, asImageRuns(env));
}

describe('the image the Dockerfile builds', () => {
  it(`is built FROM the base given as NODE_IMAGE (never pulled: any other FROM fails the build): Node.js ${NODE.version}`, async () => {
    const { code, stdout, stderr } = await runOnce(['node', '--version']);
    expect(code, stderr).toBe(0);
    expect(stdout.trim()).toBe(`v${NODE.version}`);
  });

  it('runs as a user that is not root, who alone owns the state directory (EXPORTER_STORAGE_PATH, a VOLUME)', async () => {
    const state = imageEnv.EXPORTER_STORAGE_PATH ?? '';
    expect(state).not.toBe('');
    expect(Object.keys(config.Volumes ?? {})).toEqual([state]);
    const { code, stdout, stderr } = await runOnce(['sh', '-c', 'id -u; id -un; stat -c "%U %a" "$EXPORTER_STORAGE_PATH"']);
    expect(code, stderr).toBe(0);
    const [uid, user, owner] = stdout.trim().split('\n');
    expect(uid).not.toBe('0');
    expect(owner).toBe(`${user} 700`);
  });

  it('holds every module of src/ compiled in dist/, every production dependency and no development one', async () => {
    const modules = (dir: string): string[] =>
      readdirSync(join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? modules(join(dir, e.name)) : e.name.endsWith('.ts') ? [join('dist', relative('src', join(dir, e.name))).replace(/\.ts$/, '.js')] : [],
      );
    const expected = modules('src');
    expect(expected.length).toBeGreaterThan(100);
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: object; devDependencies: object };
    // In the container: which of the files are missing, which dependencies do not resolve, which dev ones are there.
    const script = `
      const { existsSync } = await import('node:fs');
      const [files, deps, devDeps] = JSON.parse(process.argv[1]);
      const resolves = (d) => { try { import.meta.resolve(d); return existsSync('node_modules/' + d + '/package.json'); } catch { return false; } };
      console.log(JSON.stringify({ missing: files.filter((f) => !existsSync(f)), unresolved: deps.filter((d) => !resolves(d)), dev: devDeps.filter((d) => existsSync('node_modules/' + d)) }));`;
    const input = JSON.stringify([expected, Object.keys(pkg.dependencies), Object.keys(pkg.devDependencies)]);
    const { code, stdout, stderr } = await runOnce(['node', '--input-type=module', '-e', script, input]);
    expect(code, stderr).toBe(0);
    let found: unknown = `not JSON: ${stdout}`;
    try {
      found = JSON.parse(stdout);
    } catch {
      // shown as it is
    }
    expect(found, stderr).toEqual({ missing: [], unresolved: [], dev: [] });
  });

  it('carries neither the demo secret nor the tests or sources of the build context', async () => {
    const { code, stdout, stderr } = await runOnce(['sh', '-c', 'ls -A; ls -A config']);
    expect(code, stderr).toBe(0);
    const entries = stdout.trim().split('\n');
    expect(entries).toEqual(expect.arrayContaining(['dist', 'node_modules', 'package.json', 'docs', 'exporter.example.yaml']));
    for (const absent of ['src', 'test', '.git', 'compose', 'cmdb_secret', '.npmrc', 'tsconfig.json']) expect(entries, absent).not.toContain(absent);
  });

  it('listens where the compose Prometheus scrapes it (cmdb-exporter:9873) and keeps its state where compose mounts its volume', () => {
    const prometheus = readFileSync(join(REPO_ROOT, 'config/prometheus/prometheus.yml'), 'utf8');
    const port = /cmdb-exporter:(\d+)/.exec(prometheus)?.[1];
    const listen = exporterService.environment?.EXPORTER_LISTEN_ADDRESS ?? imageEnv.EXPORTER_LISTEN_ADDRESS ?? '';
    expect(listen.slice(listen.lastIndexOf(':') + 1)).toBe(port);
    expect(Object.keys(config.ExposedPorts ?? {})).toEqual([`${port}/tcp`]);
    const state = exporterService.environment?.EXPORTER_STORAGE_PATH ?? imageEnv.EXPORTER_STORAGE_PATH;
    expect((exporterService.volumes ?? []).map((v) => v.split(':')[1])).toContain(state);
  });
});

describe("compose's simulator service, from the image", () => {
  it('started with its entrypoint and command (on loopback), it passes its own healthcheck in the container', async () => {
    const port = new URL(simulatorUrl).port;
    const [kind, ...test] = simulatorService.healthcheck?.test ?? [];
    expect(kind).toBe('CMD');
    const probe = test.map((a) => a.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${port}`));
    const { code, stderr } = await runIn(simulatorContainer, probe, asImageRuns());
    expect(code, stderr).toBe(0);
  });
});

describe("the image's ENTRYPOINT with the compose exporter's environment, secret and volume", () => {
  /** The uid the image's USER has in the image. */
  let imageUid = '';
  beforeAll(async () => {
    const { code, stdout, stderr } = await runOnce(['sh', '-c', 'id -u; stat -c "%u %g" "$EXPORTER_STORAGE_PATH"']);
    expect(code, stderr).toBe(0);
    const [uid = '', owner = ''] = stdout.trim().split('\n');
    imageUid = uid;
    // Docker gives a new named volume the owner and mode of the image's folder it is mounted on.
    const [ownerUid, ownerGid] = owner.split(' ').map(Number);
    chownSync(stateDir, ownerUid!, ownerGid!);
    chmodSync(stateDir, 0o700);
    exporterContainer = await fromImage(image, runContainer('exporter'));
    await mountOverVolume(exporterContainer, imageEnv.EXPORTER_STORAGE_PATH ?? '');
  });

  const composeEnv = (listen: string) => ({
    ...exporterService.environment,
    // The simulator on loopback instead of the compose network's name; a free port instead of 9873.
    CMDB_BASE_URL: simulatorUrl,
    EXPORTER_LISTEN_ADDRESS: listen,
  });

  it('checks the configuration (--check-config)', async () => {
    const { code, stdout, stderr } = await runIn(exporterContainer, [...containerCommand(config), '--check-config'], asImageRuns(composeEnv('127.0.0.1:0'), secretMounts));
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('configuration OK: 1 stack(s) (default)');
  });

  it('starts the daemon as the image declares it: /healthz, every endpoint polled, /metrics, the runbooks it serves', async () => {
    const volumes = [`${stateDir}:${imageEnv.EXPORTER_STORAGE_PATH ?? ''}`, ...secretMounts];
    const started = await onFreePort(async (port) => {
      exporterEnv = composeEnv(`127.0.0.1:${port}`);
      const proc = new ContainerProcess('exporter', exporterContainer, containerCommand(config), asImageRuns(exporterEnv, volumes));
      const line = await proc.proc.waitForLine('"listening on" log line', (l) => listeningUrl(l) !== undefined, 120_000);
      return { proc, url: listeningUrl(line) ?? '' };
    });
    exporter = started.proc;
    exporterUrl = started.url;
    // The process is the image's command, as the image's user, in its workdir.
    const pid = exporter.mainPid();
    const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    expect(uid).toBe(imageUid);
    expect(readlinkSync(`/proc/${pid}/cwd`).endsWith(config.WorkingDir ?? '')).toBe(true);
    expect((await http(`${exporterUrl}/healthz`)).status).toBe(200);
    await waitUntilReady({ proc: exporter.proc, url: exporterUrl, port: Number(new URL(exporterUrl).port) }, 120_000);
    const metrics = (await http(`${exporterUrl}/metrics`)).text;
    expect(metrics).toContain('cmdb_endpoint_up{stack="default",endpoint="user_change"} 1');
    expect((await http(`${exporterUrl}/docs/alerts`)).status).toBe(200);
    expect(exporter.proc.output()).not.toContain(readFileSync(secretMounts[0]!.split(':')[0]!, 'utf8').trim());
  });

  it('HEALTHCHECK, run in the container, exits 0 against the running daemon and 1 when nothing listens', async () => {
    expect(exporter, 'the ENTRYPOINT test started the daemon').toBeDefined();
    const [kind, ...test] = config.Healthcheck?.Test ?? [];
    const probe = kind === 'CMD-SHELL' ? ['/bin/sh', '-c', ...test] : test;
    expect(kind).toMatch(/^CMD(-SHELL)?$/);
    const healthy = await runIn(exporterContainer, probe, asImageRuns(exporterEnv));
    expect(healthy.code, healthy.stderr).toBe(0);
    const nobody = await runIn(exporterContainer, probe, asImageRuns({ ...exporterEnv, EXPORTER_LISTEN_ADDRESS: `127.0.0.1:${await freePort()}` }));
    expect(nobody.code).toBe(1);
  });

  it('docker stop: SIGTERM to the entrypoint ends the daemon with exit 0, its state kept in the volume', async () => {
    expect(exporter, 'the ENTRYPOINT test started the daemon').toBeDefined();
    // Generous before the SIGKILL: the shutdown deadline is the daemon's own (10 s on its clock).
    const stopped = await exporter!.stop(60_000);
    // Exit 0 is the daemon's own word that it stopped within its deadline (past it, it exits 1); its
    // last log lines may not reach this side (buildah's relay of the output does not wait for them).
    expect(stopped, exporter!.proc.tail()).toMatchObject({ code: 0, killed: false });
    expect(readdirSync(stateDir, { recursive: true }), exporter!.proc.output()).toContain(join('stacks', 'default.json.gz'));
  });
});
