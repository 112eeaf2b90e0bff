/**
 * Debian's buildah, as the image test drives it: every command on a storage of the project's own
 * (a folder in the cache, the vfs driver: it needs no kernel overlay support), processes isolated by
 * chroot (no runtime such as runc, no user namespaces: it needs root, and nothing more), on the
 * host's network so that a container and the test reach each other on loopback.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { processAlive } from '../../../src/persist/lock.js';
import { runToCompletion, startProcess, type ManagedProcess, type Stopped } from '../../e2e/harness/processes.js';
import { REPO_ROOT } from '../../e2e/harness/tools.js';

const run = promisify(execFile);

/** The cache of the image test, outside git: the buildah storage the made base is kept in, npm's downloads. */
export function imageCache(env: NodeJS.ProcessEnv = process.env): string {
  return env.CMDB_IMAGE_CACHE?.trim() || join(REPO_ROOT, 'node_modules', '.cache', 'cmdb-exporter-image');
}

/** The global options of every buildah command: where its images and containers are kept. */
export function storageOptions(cache = imageCache()): string[] {
  mkdirSync(cache, { recursive: true });
  // By its real path: checkouts that share node_modules by a link share one storage, and one run root.
  const root = join(realpathSync(cache), 'storage');
  // The run root holds locks and mount state only, and must not outlive a reboot: a temporary folder.
  const runroot = join(tmpdir(), `cmdb-exporter-image-${createHash('sha256').update(root).digest('hex').slice(0, 12)}`);
  return ['--root', root, '--runroot', runroot, '--storage-driver', 'vfs'];
}

/** What buildah itself needs of the environment (a container gets only what the test gives it). */
function buildahEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', HOME: process.env.HOME ?? '/root', TMPDIR: tmpdir() };
}

/**
 * Runs one buildah command to completion (not blocking the event loop: a build takes minutes);
 * throws with the end of its output when it fails.
 */
export async function buildah(args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run('buildah', [...storageOptions(), ...args], { encoding: 'utf8', env: buildahEnv(), maxBuffer: 256 << 20 });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: unknown; message: string };
    const output = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message;
    throw new Error(`buildah ${args.slice(0, 3).join(' ')} failed (exit ${String(e.code)}):\n${output.split('\n').slice(-60).join('\n')}`);
  }
}

/** True when the storage holds an image of that name. */
export function imageExists(name: string): boolean {
  return spawnSync('buildah', [...storageOptions(), 'inspect', '--type', 'image', name], { env: buildahEnv(), stdio: 'ignore' }).status === 0;
}

/** What an image declares (Docker's form: the one that keeps HEALTHCHECK). */
export interface ImageConfig {
  readonly User?: string;
  readonly WorkingDir?: string;
  readonly Env?: readonly string[];
  readonly Entrypoint?: readonly string[] | null;
  readonly Cmd?: readonly string[] | null;
  readonly ExposedPorts?: Readonly<Record<string, unknown>>;
  readonly Volumes?: Readonly<Record<string, unknown>>;
  readonly Healthcheck?: { readonly Test?: readonly string[] };
}

export async function inspectImage(name: string): Promise<ImageConfig> {
  const out = JSON.parse(await buildah(['inspect', '--type', 'image', name])) as { Docker?: { config?: ImageConfig }; OCIv1?: { config?: ImageConfig } };
  const config = out.Docker?.config ?? out.OCIv1?.config;
  if (!config) throw new Error(`buildah inspect ${name}: no image configuration`);
  return config;
}

/** `KEY=value` entries as a map. */
export function envMap(env: readonly string[] = []): Record<string, string> {
  return Object.fromEntries(env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
}

/** The command a container of the image runs: ENTRYPOINT, then CMD, as `docker run` joins them. */
export function containerCommand(config: ImageConfig): string[] {
  return [...(config.Entrypoint ?? []), ...(config.Cmd ?? [])];
}

/** Pids of the processes below `pid` (the process tree from /proc). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // the process ended while the table was read
    }
  }
  const out: number[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const next = children.get(queue.shift()!) ?? [];
    out.push(...next);
    queue.push(...next);
  }
  return out;
}

function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return [];
  }
}

export interface RunOptions {
  readonly user?: string;
  readonly workdir?: string;
  /** The container's whole environment, in order (later entries of a name win). */
  readonly env: Readonly<Record<string, string>>;
  /** host path → container path (`:ro` appended by the caller where wanted). */
  readonly volumes?: readonly string[];
}

function runArgs(container: string, command: readonly string[], opts: RunOptions): string[] {
  return [
    'run',
    '--isolation',
    'chroot',
    '--network',
    'host',
    ...(opts.user ? ['--user', opts.user] : []),
    ...(opts.workdir ? ['--workingdir', opts.workdir] : []),
    ...Object.entries(opts.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    ...(opts.volumes ?? []).flatMap((v) => ['--volume', v]),
    container,
    '--',
    ...command,
  ];
}

/**
 * A long-running process in a container, as `docker run` starts it: buildah in a process group of
 * its own (a buildah killed outright leaves its child running: the group is killed on the way out).
 * stop() is `docker stop`: SIGTERM to the container's command itself (chroot isolation has no pid
 * namespace, so that is a host process below buildah), then SIGKILL to the group after `graceMs`.
 */
export class ContainerProcess {
  readonly proc: ManagedProcess;

  constructor(
    name: string,
    container: string,
    private readonly command: readonly string[],
    opts: RunOptions,
  ) {
    this.proc = startProcess(name, 'buildah', [...storageOptions(), ...runArgs(container, command, opts)], { cwd: tmpdir(), env: buildahEnv(), group: true });
  }

  /** The pid of the container's command, found by its command line below buildah. */
  mainPid(): number {
    const pid = this.proc.pid;
    // The command as started: its program by its full path in the container, then the same arguments.
    const same = (line: string[]) => basename(line[0] ?? '') === basename(this.command[0] ?? '') && line.slice(1).join('\0') === this.command.slice(1).join('\0');
    const found = pid === undefined ? undefined : descendants(pid).find((p) => same(commandLine(p)));
    if (found === undefined) throw new Error(`${this.proc.name}: no process ${this.command.join(' ')} below buildah (pid ${String(pid)})\n${this.proc.tail()}`);
    return found;
  }

  async stop(graceMs = 20_000): Promise<Stopped> {
    const started = Date.now();
    const result = (exit: { code: number | null; signal: NodeJS.Signals | null }, killed: boolean): Stopped => ({ name: this.proc.name, ...exit, ms: Date.now() - started, killed });
    if (this.proc.hasExited) return result(await this.proc.exited, false);
    let main: number;
    try {
      main = this.mainPid();
    } catch {
      // The command is gone but buildah is not: stopping buildah is all that is left.
      return this.proc.stop(graceMs);
    }
    // Not to buildah: on SIGTERM it kills the command outright.
    process.kill(main, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), graceMs);
    });
    const first = await Promise.race([this.proc.exited, timedOut]);
    clearTimeout(timer);
    if (first !== 'timeout') return result(first, false);
    this.proc.killNow();
    return result(await this.proc.exited, true);
  }
}

/**
 * A command run to completion in a container (`docker exec`, or a `docker run` that ends by itself).
 * buildah 1.28's chroot isolation exits with the command's status as soon as the command ends,
 * without waiting for its relay of the command's output to catch up (the last of the output, or all
 * of a short one, is lost now and then): so the command's output goes to files in a folder of the
 * host mounted into the container (`exec` in a shell sets that up; the command itself runs as given),
 * read once it is done.
 */
export async function runIn(container: string, command: readonly string[], opts: RunOptions): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-image-output-'));
  try {
    chmodSync(dir, 0o777);
    const inside = '/run/cmdb-exporter-test-output';
    const redirected = ['/bin/sh', '-c', `exec "$@" >${inside}/stdout 2>${inside}/stderr`, 'sh', ...command];
    const done = await runToCompletion('buildah', [...storageOptions(), ...runArgs(container, redirected, { ...opts, volumes: [...(opts.volumes ?? []), `${dir}:${inside}`] })], {
      cwd: tmpdir(),
      env: buildahEnv(),
      timeoutMs: 120_000,
    });
    const read = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8') : '');
    // buildah's own complaints (a mount it could not make) are on its stderr, not the command's.
    return { code: done.code, stdout: read('stdout'), stderr: `${read('stderr')}${done.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A working container of `image`. */
export async function fromImage(image: string, name: string): Promise<string> {
  return (await buildah(['from', '--pull=never', '--name', name, image])).trim();
}

/**
 * Lets a `--volume` of the host take the place of the image's VOLUME at `path` in this container, as
 * `docker run -v` does: buildah 1.28 mounts both, in an order that changes from run to run (its
 * anonymous volume on top, now and then), unless the container no longer declares the VOLUME.
 */
export async function mountOverVolume(container: string, path: string): Promise<void> {
  await buildah(['config', '--volume', `${path}-`, container]);
}

const RUN_PREFIX = 'cmdb-exporter-test-';
const RUN_REPOSITORY = 'localhost/cmdb-exporter-test';

/** The name of a working container of this run: the process id in it tells a later run whose it was. */
export const runContainer = (role: string): string => `${RUN_PREFIX}${process.pid}-${role}`;
/** The image this run builds. */
export const runImage = (): string => `${RUN_REPOSITORY}:${process.pid}`;

/**
 * Removes the working containers and the image of this run, or (`gone`) those a run left whose
 * process has ended (killed before its clean-up): vfs keeps a whole copy of the files per container.
 */
export async function removeRuns(which: 'this' | 'gone'): Promise<void> {
  const wanted = (pid: number) => (which === 'this' ? pid === process.pid : !processAlive(pid));
  const containers = (await buildah(['containers', '--format', '{{.ContainerName}}'])).split('\n');
  for (const name of containers) {
    const pid = new RegExp(`^${RUN_PREFIX}(\\d+)-`).exec(name)?.[1];
    if (pid && wanted(Number(pid))) await buildah(['rm', name]);
  }
  const images = (await buildah(['images', '--format', '{{.Name}}:{{.Tag}}'])).split('\n');
  for (const image of images) {
    const pid = new RegExp(`^${RUN_REPOSITORY}:(\\d+)$`).exec(image)?.[1];
    if (pid && wanted(Number(pid))) await buildah(['rmi', image]);
  }
}

/**
 * What the build's RUN steps see at /usr/local/etc (empty in the official node images, so nothing is
 * hidden): a global npmrc that keeps npm's download cache here, across runs, and, on a machine whose
 * npm trusts a CA file of its own (`npm config get cafile`: a proxy that inspects TLS), that file.
 * It is mounted for the build only: nothing of it lands in an image.
 */
async function buildEtc(): Promise<string> {
  const dir = join(imageCache(), 'build-etc');
  mkdirSync(join(dir, 'npm-cache'), { recursive: true });
  const lines = ['cache=/usr/local/etc/npm-cache', 'update-notifier=false'];
  const { stdout } = await run('npm', ['config', 'get', 'cafile'], { cwd: tmpdir(), encoding: 'utf8' });
  const cafile = stdout.trim();
  if (cafile && cafile !== 'null' && cafile !== 'undefined' && existsSync(cafile)) {
    copyFileSync(cafile, join(dir, 'npm-ca.crt'));
    lines.push('cafile=/usr/local/etc/npm-ca.crt');
  }
  writeFileSync(join(dir, 'npmrc'), `${lines.join('\n')}\n`);
  return dir;
}

/**
 * `buildah bud` of the repository's Dockerfile FROM `base` (its NODE_IMAGE build argument), as
 * `docker build` would: Docker's image format (OCI's has no HEALTHCHECK), one layer per stage,
 * the base only from the storage (never pulled: a wrong FROM fails here), working containers
 * removed whether it succeeds or not. Returns the build's output.
 */
export async function buildImage(opts: { context: string; base: string; tag: string }): Promise<string> {
  const etc = await buildEtc();
  const args = ['bud', '--isolation', 'chroot', '--format', 'docker', '--pull=never', '--layers=false', '--force-rm'];
  args.push('--build-arg', `NODE_IMAGE=${opts.base}`, '--volume', `${etc}:/usr/local/etc`, '--tag', opts.tag, opts.context);
  // buildah's own environment, with the machine's proxy settings, which it passes to the RUN steps.
  const child = spawn('buildah', [...storageOptions(), ...args], { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  // Both streams in the order they came: a RUN step's errors (stderr) after the step that ran it (stdout).
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  child.stderr.on('data', (c: Buffer) => chunks.push(c));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  const output = Buffer.concat(chunks).toString('utf8');
  if (code !== 0) {
    const lines = output.trimEnd().split('\n');
    const step = lines.findLast((l) => /\bSTEP \d+\/\d+:/.test(l)) ?? '(before the first step)';
    throw new Error(`the image build failed (buildah bud, exit ${String(code)}) at ${step}\n${lines.slice(-40).join('\n')}`);
  }
  return output;
}
