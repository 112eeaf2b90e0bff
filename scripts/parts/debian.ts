/**
 * Debian packages by name and exact version, without root and without touching the system's apt
 * configuration: a private sources list naming the suites wanted on the machine's own Debian mirror
 * (read from its apt sources at run time, so that no registry host is written into the repository),
 * private lists and cache, `apt-get update`, then `apt-get download PKG=VERSION`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DebianPackage } from './index.js';

/** Debian's release names and aliases: an apt source for one of these is Debian's own archive. */
const DEBIAN_SUITES = new Set(['buster', 'bullseye', 'bookworm', 'trixie', 'forky', 'duke', 'sid', 'oldstable', 'stable', 'testing', 'unstable']);

export interface AptSource {
  readonly uri: string;
  readonly suites: readonly string[];
  readonly signedBy?: string;
}

/** The `deb` entries of one-line (`.list`) and deb822 (`.sources`) files. */
export function parseAptSources(text: string, deb822: boolean): AptSource[] {
  const sources: AptSource[] = [];
  if (!deb822) {
    for (const raw of text.split('\n')) {
      const line = raw.replace(/#.*/, '').trim();
      const m = /^deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)/.exec(line);
      if (!m) continue;
      const signedBy = /signed-by=(\S+)/.exec(m[1] ?? '')?.[1];
      sources.push({ uri: m[2]!, suites: [m[3]!], ...(signedBy ? { signedBy } : {}) });
    }
    return sources;
  }
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    for (const line of stanza.split('\n')) {
      const m = /^([\w-]+):\s*(.*)$/.exec(line.replace(/#.*/, ''));
      if (m) fields.set(m[1]!.toLowerCase(), m[2]!.trim());
    }
    if (!(fields.get('types') ?? '').split(/\s+/).includes('deb') || fields.get('enabled') === 'no') continue;
    const signedBy = fields.get('signed-by');
    for (const uri of (fields.get('uris') ?? '').split(/\s+/).filter(Boolean)) {
      sources.push({ uri, suites: (fields.get('suites') ?? '').split(/\s+/).filter(Boolean), ...(signedBy?.startsWith('/') ? { signedBy } : {}) });
    }
  }
  return sources;
}

/**
 * The machine's Debian mirror: the first apt source whose suites include a Debian release (not its
 * security archive). CMDB_PARTS_DEBIAN_MIRROR names one on a machine without such a source.
 */
export function debianMirror(etc = '/etc/apt', env: NodeJS.ProcessEnv = process.env): AptSource {
  const named = env.CMDB_PARTS_DEBIAN_MIRROR?.trim();
  if (named) return { uri: named, suites: [] };
  const files: [string, boolean][] = [];
  if (existsSync(join(etc, 'sources.list'))) files.push([join(etc, 'sources.list'), false]);
  const parts = join(etc, 'sources.list.d');
  if (existsSync(parts)) {
    for (const f of readdirSync(parts).sort()) {
      if (f.endsWith('.list')) files.push([join(parts, f), false]);
      if (f.endsWith('.sources')) files.push([join(parts, f), true]);
    }
  }
  for (const [file, deb822] of files) {
    for (const source of parseAptSources(readFileSync(file, 'utf8'), deb822)) {
      if (/security/.test(source.uri)) continue;
      if (source.suites.some((s) => DEBIAN_SUITES.has(s))) return source;
    }
  }
  throw new Error(
    `no Debian mirror in ${etc}/sources.list or ${etc}/sources.list.d: the test parts come from Debian's packages. ` +
      `Name a mirror with CMDB_PARTS_DEBIAN_MIRROR=<its URL>, or name each binary with CMDB_PART_<NAME> (docs/development.md, "The real parts")`,
  );
}

function aptOptions(dir: string): string[] {
  const options = [
    `Dir::Etc::sourcelist=${join(dir, 'sources.list')}`,
    'Dir::Etc::sourceparts=-',
    `Dir::State::Lists=${join(dir, 'lists')}`,
    `Dir::Cache=${join(dir, 'cache')}`,
  ];
  // As root, apt drops to the _apt user to download, who cannot write into a private folder.
  if (process.getuid?.() === 0) options.push('APT::Sandbox::User=root');
  return options.flatMap((o) => ['-o', o]);
}

function run(args: string[], cwd: string): { ok: boolean; output: string } {
  try {
    const output = execFileSync('apt-get', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 15 * 60_000 });
    return { ok: true, output };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message };
  }
}

const updated = new Set<string>();

/** `apt-get update` of the private lists, once per process and folder. */
function update(dir: string, suites: readonly string[], what: string): void {
  if (updated.has(dir)) return;
  const mirror = debianMirror();
  mkdirSync(join(dir, 'lists', 'partial'), { recursive: true });
  mkdirSync(join(dir, 'cache', 'archives', 'partial'), { recursive: true });
  const options = mirror.signedBy && existsSync(mirror.signedBy) ? ` [signed-by=${mirror.signedBy}]` : '';
  writeFileSync(join(dir, 'sources.list'), suites.map((s) => `deb${options} ${mirror.uri} ${s} main\n`).join(''));
  const { ok, output } = run([...aptOptions(dir), '-q', 'update'], dir);
  if (!ok) {
    throw new Error(`${what}: apt-get update of Debian ${suites.join(', ')} from ${mirror.uri} failed:\n${output.trim().split('\n').slice(-5).join('\n')}\nCheck that the mirror answers, or name the binary with its CMDB_PART_ variable (docs/development.md, "The real parts")`);
  }
  updated.add(dir);
}

/** Every suite any part names, so that one list serves both tiers. */
const ALL_SUITES = ['sid', 'bookworm'];

/**
 * Downloads `debs` into `into` and returns their paths, in order. A version the mirror no longer
 * carries (Debian moved on) fails naming the part, the version and what the suite has now.
 */
export function aptDownload(dir: string, into: string, debs: readonly DebianPackage[], what: string): string[] {
  const suites = [...new Set([...ALL_SUITES, ...debs.map((d) => d.suite)])];
  update(dir, suites, what);
  const files: string[] = [];
  for (const deb of debs) {
    for (const f of readdirSync(into)) if (f.startsWith(`${deb.package}_`)) rmSync(join(into, f), { force: true });
    const { ok, output } = run([...aptOptions(dir), '-q', 'download', `${deb.package}=${deb.version}`], into);
    if (!ok) {
      const policy = run([...aptOptions(dir), '-q', 'policy', deb.package].map((a) => a), into);
      const candidate = /Candidate:\s*(\S+)/.exec(policy.output)?.[1];
      throw new Error(
        `${what}: Debian ${deb.suite} package ${deb.package} ${deb.version} could not be downloaded` +
          (candidate ? ` (the mirror's newest is ${candidate}; Debian removes superseded versions)` : '') +
          `:\n${output.trim().split('\n').slice(-3).join('\n')}\n` +
          'Pin the version the suite carries now with `npm run parts -- --repin` after checking it, or name the binary with its CMDB_PART_ variable (docs/development.md, "The real parts")',
      );
    }
    const file = readdirSync(into).find((f) => f.startsWith(`${deb.package}_`) && f.endsWith('.deb'));
    if (!file) throw new Error(`${what}: apt-get download ${deb.package}=${deb.version} wrote no .deb into ${into}`);
    files.push(join(into, file));
  }
  return files;
}

/** The version and sha256 `suite` carries now of `pkg` (for `npm run parts -- --repin`). */
export function suiteCarries(dir: string, pkg: string, suite: string): { version: string; sha256: string } | undefined {
  update(dir, [...new Set([...ALL_SUITES, suite])], pkg);
  const cache = (args: string[]) => execFileSync('apt-cache', [...aptOptions(dir), ...args], { encoding: 'utf8' });
  // madison: "prometheus | 3.5.3+ds1-6 | http://… sid/main amd64 Packages"
  const line = cache(['madison', pkg]).split('\n').find((l) => new RegExp(`\\s${suite}/main\\s`).test(l));
  const version = line?.split('|')[1]?.trim();
  if (!version) return undefined;
  const sha256 = /^SHA256: (\w+)$/m.exec(cache(['show', `${pkg}=${version}`]))?.[1];
  return sha256 ? { version, sha256 } : undefined;
}
