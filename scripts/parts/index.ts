/**
 * The real parts the tests, the demo and the image check start (Prometheus, promtool, Alertmanager,
 * amtool, VictoriaMetrics, headless Chromium, kubectl, Helm, jsonnet, systemd-analyze), pinned in
 * parts.json by exact version and sha256 and brought by the project itself, the way
 * mongodb-memory-server or Playwright bring theirs: on first use a part is fetched into a cache
 * folder outside git (node_modules/.cache/cmdb-exporter-parts, or CMDB_PARTS_CACHE), checked, unpacked
 * under a temporary name and renamed into place, so that nothing half-unpacked is ever run and two
 * test workers asking at once fetch it once (a lock folder in the cache).
 *
 * Debian packages come from the machine's own Debian mirror, read from its apt sources at run time:
 * `apt-get download` with a private sources list, lists and cache (nothing of the system's apt
 * configuration changes, no root needed), then `dpkg-deb -x`. npm packages (package.json pins them)
 * carry Chromium (brotli files) and kubectl and Helm (a zip).
 *
 * Two tiers (CMDB_PARTS_TIER): `current`, what users run now (the default), and `previous`. A user
 * who wants their own binary names it with CMDB_PART_<NAME> (CMDB_PART_PROMETHEUS=/usr/bin/prometheus);
 * otherwise the pinned one is used, whatever is on PATH.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync, accessSync, constants, readlinkSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync } from 'node:zlib';
import { readZipEntry } from './unzip.js';
import { aptDownload } from './debian.js';
import { withLock } from './lock.js';
import manifest from './parts.json' with { type: 'json' };

export const TIERS = ['current', 'previous'] as const;
export type Tier = (typeof TIERS)[number];
export type PartName = keyof typeof manifest.parts;
export const PART_NAMES = Object.keys(manifest.parts) as PartName[];

export interface DebianPackage {
  readonly package: string;
  readonly version: string;
  readonly suite: string;
  readonly sha256: string;
}
interface NpmSource {
  readonly package: string;
  readonly version: string;
  readonly brotli?: readonly { readonly path: string; readonly to?: string; readonly tar?: boolean; readonly sha256: string }[];
  readonly zip?: { readonly path: string; readonly entry: string; readonly to: string; readonly sha256: string };
}
export interface PartSpec {
  readonly file: string;
  /** A data folder the binary names by an absolute path (Debian's Alertmanager reads its default template there). */
  readonly dataPath?: { readonly absolute: string; readonly inside: string };
  readonly libraryPath?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly debian?: readonly DebianPackage[];
  readonly npm?: NpmSource;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The tier CMDB_PARTS_TIER names (`current` when unset); anything else is refused with the choices. */
export function currentTier(env: NodeJS.ProcessEnv = process.env): Tier {
  const raw = env.CMDB_PARTS_TIER?.trim() || 'current';
  if (!(TIERS as readonly string[]).includes(raw)) throw new Error(`CMDB_PARTS_TIER=${raw} is not a tier: use one of ${TIERS.join(', ')}`);
  return raw as Tier;
}

export function partsCache(env: NodeJS.ProcessEnv = process.env): string {
  return env.CMDB_PARTS_CACHE?.trim() || join(ROOT, 'node_modules', '.cache', 'cmdb-exporter-parts');
}

/** CMDB_PART_VICTORIA_METRICS for victoria-metrics. */
export function overrideVariable(name: PartName): string {
  return `CMDB_PART_${name.toUpperCase().replace(/-/g, '_')}`;
}

export function partSpec(name: PartName, tier: Tier = currentTier()): PartSpec {
  const entry = manifest.parts[name] as Partial<Record<Tier | 'any', PartSpec>>;
  const spec = entry[tier] ?? entry.any;
  if (!spec) throw new Error(`parts.json has no ${tier} version of ${name}`);
  return spec;
}

/** What a part is, in words: `prometheus 3.5.3+ds1-6 (Debian sid)`. */
export function describePart(name: PartName, tier: Tier = currentTier()): string {
  const override = process.env[overrideVariable(name)];
  if (override) return `${name} from ${overrideVariable(name)}=${override}`;
  const spec = partSpec(name, tier);
  if (spec.debian) {
    const [first] = spec.debian;
    return `${name} ${first!.version} (Debian ${first!.suite} package ${spec.debian.map((d) => d.package).join(' + ')})`;
  }
  return `${name} from npm ${spec.npm!.package}@${spec.npm!.version}`;
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** Throws, naming the part, the version and what to do, when a fetched file is not the pinned one. */
export function checkSha256(file: string, expected: string, what: string): void {
  const found = sha256(file);
  if (found !== expected) {
    throw new Error(
      `${what}: sha256 ${found} is not the pinned ${expected} (scripts/parts/parts.json). The file was not used. ` +
        `If the source changed the file on purpose, pin the new sum after checking it; otherwise fetch again.`,
    );
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Writes `text` to `file` atomically (a temporary name, then rename). */
function writeAtomically(file: string, text: string | Buffer, mode: number): void {
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, text, { mode });
  renameSync(partial, file);
}

/** Unpacks into a new folder under a temporary name, then renames it to `dest`: all or nothing. */
function unpackInto(dest: string, unpack: (dir: string) => void): void {
  const partial = `${dest}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    unpack(partial);
    renameSync(partial, dest);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
}

function debianDir(cache: string, debs: readonly DebianPackage[]): string {
  return join(cache, 'debian', debs.map((d) => `${d.package}_${d.version}`).join('+').replace(/[^\w.+-]/g, '_'));
}

function npmDir(cache: string, npm: NpmSource): string {
  return join(cache, 'npm', `${npm.package.replace('/', '+')}@${npm.version}`);
}

function npmPackageDir(npm: NpmSource): string {
  // Found by folder, not require.resolve: a package's exports may not name its package.json.
  const dir = join(ROOT, 'node_modules', npm.package);
  if (!existsSync(join(dir, 'package.json'))) throw new Error(`${npm.package} is not installed: run npm ci (it is a devDependency that carries a test part)`);
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  if (version !== npm.version) {
    throw new Error(`${npm.package}@${version} is installed, parts.json pins ${npm.version}: run npm ci, or pin the new version and its sums`);
  }
  return dir;
}

function fetchDebian(cache: string, name: string, debs: readonly DebianPackage[]): string {
  const dest = debianDir(cache, debs);
  if (existsSync(dest)) return dest;
  const downloads = join(cache, 'downloads');
  mkdirSync(downloads, { recursive: true });
  const files = aptDownload(join(cache, 'apt'), downloads, debs, name);
  unpackInto(dest, (dir) => {
    for (const [i, deb] of debs.entries()) {
      checkSha256(files[i]!, deb.sha256, `${name}: Debian ${deb.suite} package ${deb.package} ${deb.version}`);
      aptExtract(files[i]!, dir);
    }
  });
  for (const file of files) rmSync(file, { force: true });
  return dest;
}

function aptExtract(deb: string, dir: string): void {
  // dpkg-deb -x keeps the package's modes (executables stay executable).
  execFileSync('dpkg-deb', ['-x', deb, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
}

function fetchNpm(cache: string, name: string, npm: NpmSource): string {
  const dest = npmDir(cache, npm);
  const source = npmPackageDir(npm);
  const what = (path: string) => `${name}: ${npm.package}@${npm.version} ${path}`;
  if (npm.zip) {
    const { zip } = npm;
    const target = join(dest, zip.to);
    if (existsSync(target)) return dest;
    mkdirSync(dest, { recursive: true });
    const archive = join(source, zip.path);
    checkSha256(archive, zip.sha256, what(zip.path));
    writeAtomically(target, readZipEntry(readFileSync(archive), zip.entry), 0o755);
    return dest;
  }
  if (existsSync(dest)) return dest;
  unpackInto(dest, (dir) => {
    for (const file of npm.brotli ?? []) {
      const path = join(source, file.path);
      checkSha256(path, file.sha256, what(file.path));
      const bytes = brotliDecompressSync(readFileSync(path));
      if (file.tar) {
        execFileSync('tar', ['-x', '-C', dir], { input: bytes, maxBuffer: 1 << 30 });
      } else {
        writeFileSync(join(dir, file.to!), bytes, { mode: 0o755 });
      }
    }
    // Chromium's fonts: a fontconfig file of our own (the package's names /tmp/fonts).
    if (existsSync(join(dir, 'fonts'))) {
      const final = join(dest, 'fonts');
      writeFileSync(
        join(dir, 'fonts', 'fonts.conf'),
        `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${final}</dir>\n  <cachedir>${join(dest, 'fonts-cache')}</cachedir>\n</fontconfig>\n`,
      );
    }
  });
  return dest;
}

/**
 * The executable of a part whose spec needs a library path or environment: a two-line shell
 * wrapper beside the unpacked files (written once, atomically).
 */
function wrapper(dir: string, name: string, spec: PartSpec): string {
  const exe = spec.dataPath ? relocated(dir, name, spec.file, spec.dataPath) : join(dir, spec.file);
  if (!spec.libraryPath?.length && !spec.env) return exe;
  const wrappers = join(dir, '.wrappers');
  const target = join(wrappers, name);
  if (existsSync(target)) return target;
  mkdirSync(wrappers, { recursive: true });
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const lines = ['#!/bin/sh'];
  if (spec.libraryPath?.length) {
    lines.push(`LD_LIBRARY_PATH=${quote(spec.libraryPath.map((p) => join(dir, p)).join(':'))}\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`, 'export LD_LIBRARY_PATH');
  }
  for (const [key, value] of Object.entries(spec.env ?? {})) lines.push(`${key}=\${${key}:-${quote(join(dir, value))}}`, `export ${key}`);
  lines.push(`exec ${quote(exe)} "$@"`, '');
  writeAtomically(target, lines.join('\n'), 0o755);
  return target;
}

/** Links of `prefix` whose cache is gone (a removed checkout): made again on demand if it comes back. */
export function removeDanglingLinks(prefix: string): void {
  for (const entry of readdirSync(dirname(prefix))) {
    const path = join(dirname(prefix), entry);
    if (path.startsWith(prefix) && !existsSync(path)) rmSync(path, { force: true });
  }
}

/**
 * A copy of the binary that reads its data folder from the unpacked package instead of the absolute
 * path Debian built in (which exists only when the package is installed): the path is replaced, byte
 * for byte, by a link of the same length in the temporary folder that points into the package. The
 * link is made again whenever it is missing (a temporary folder cleaned under a long-lived cache).
 */
function relocated(dir: string, name: string, file: string, data: { absolute: string; inside: string }): string {
  const prefix = join(tmpdir(), 'cmdb-part-');
  // The cache's real path: a checkout that reaches it through a link (a copy with node_modules
  // linked) shares its link and its relocated binary instead of leaving one of its own behind.
  const real = realpathSync(dir);
  const digest = createHash('sha256').update(real).digest('hex');
  const room = data.absolute.length - prefix.length;
  if (room < 12) throw new Error(`${name}: the temporary folder ${tmpdir()} has too long a path to relocate ${data.absolute}; set TMPDIR=/tmp`);
  const link = prefix + digest.slice(0, room);
  if (readlinkOrEmpty(link) !== join(real, data.inside)) {
    removeDanglingLinks(prefix);
    const partial = `${link}.${process.pid}.partial`;
    rmSync(partial, { force: true });
    symlinkSync(join(real, data.inside), partial);
    renameSync(partial, link);
  }
  const target = join(dir, '.relocated', name);
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  const bytes = readFileSync(join(dir, file));
  const from = Buffer.from(data.absolute);
  const to = Buffer.from(link);
  let count = 0;
  for (let at = bytes.indexOf(from); at >= 0; at = bytes.indexOf(from, at + from.length)) {
    to.copy(bytes, at);
    count++;
  }
  if (count === 0) throw new Error(`${name}: ${file} does not name ${data.absolute}; parts.json's dataPath is out of date`);
  writeAtomically(target, bytes, 0o755);
  return target;
}

const resolved = new Map<string, string>();

/**
 * The path of a part's executable for `tier`: the one CMDB_PART_<NAME> names, or the pinned one,
 * fetched on first use. Throws with which part, which version and what to do when it cannot be had.
 */
export function part(name: PartName, tier: Tier = currentTier()): string {
  const variable = overrideVariable(name);
  const override = process.env[variable]?.trim();
  if (override) {
    if (!isExecutable(override)) throw new Error(`${variable}=${override} is not an executable file: name the ${name} binary to use, or unset it for the pinned one`);
    return override;
  }
  const key = `${tier}/${name}`;
  const known = resolved.get(key);
  if (known) return known;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`the pinned ${name} is for linux x64, this is ${process.platform} ${process.arch}: name your own with ${variable}`);
  }
  const spec = partSpec(name, tier);
  const cache = partsCache();
  mkdirSync(cache, { recursive: true });
  const exe = withLock(cache, () => {
    const dir = spec.debian ? fetchDebian(cache, name, spec.debian) : fetchNpm(cache, name, spec.npm!);
    return wrapper(dir, name, spec);
  });
  if (!isExecutable(exe)) throw new Error(`${describePart(name, tier)}: ${exe} is not an executable file after unpacking; remove ${cache} and try again`);
  resolved.set(key, exe);
  return exe;
}

/** The command names each part answers to on PATH (Debian calls Alertmanager prometheus-alertmanager). */
const COMMANDS: Partial<Record<PartName, readonly string[]>> = { alertmanager: ['alertmanager', 'prometheus-alertmanager'] };

/**
 * PATH with a folder in front that holds the given parts under their command names, for a child
 * process that looks a program up on PATH (the backfill's promtool, the demo's Prometheus).
 */
export function pathWithParts(names: readonly PartName[], tier: Tier = currentTier(), path = process.env.PATH ?? '/usr/bin:/bin'): string {
  const bin = join(partsCache(), 'path', tier);
  mkdirSync(bin, { recursive: true });
  for (const name of names) {
    const exe = part(name, tier);
    for (const command of COMMANDS[name] ?? [name]) {
      const link = join(bin, command);
      if (existsSync(link) && readlinkOrEmpty(link) === exe) continue;
      const partial = `${link}.${process.pid}.partial`;
      rmSync(partial, { force: true });
      symlinkSync(exe, partial);
      renameSync(partial, link);
    }
  }
  return `${bin}:${path}`;
}

function readlinkOrEmpty(link: string): string {
  try {
    return readlinkSync(link);
  } catch {
    return '';
  }
}

/** Every part of `tier`, fetched (the `npm run parts` command). */
export function fetchAll(tier: Tier = currentTier()): { name: PartName; path: string; what: string }[] {
  return PART_NAMES.map((name) => ({ name, path: part(name, tier), what: describePart(name, tier) }));
}

/** Cache folders no part of parts.json names any more (older pinned versions), for `npm run parts -- --prune`. */
export function unusedCacheEntries(): string[] {
  const cache = partsCache();
  const wanted = new Set<string>();
  for (const name of PART_NAMES) {
    for (const tier of TIERS) {
      const spec = partSpec(name, tier);
      wanted.add(spec.debian ? debianDir(cache, spec.debian) : npmDir(cache, spec.npm!));
    }
  }
  const found: string[] = [];
  for (const kind of ['debian', 'npm']) {
    const dir = join(cache, kind);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir)) if (!wanted.has(join(dir, entry))) found.push(join(dir, entry));
  }
  return found;
}
