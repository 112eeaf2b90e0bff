/**
 * Real Helm, offline, for the chart's tests: the binaries the npm devDependencies carry
 * (scripts/helm/binary.ts), run with a private HELM_* home so that nothing of the machine's
 * Helm set-up (repositories, plugins) takes part.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { helmBinary, HELM_MAJORS, type HelmMajor } from '../../scripts/helm/binary.js';
import { parseObjects, ROOT, type Obj } from './manifests.js';

export { HELM_MAJORS, type HelmMajor };
export const CHART = join(ROOT, 'deploy/helm/cmdb-exporter');
export const RELEASE = 'cmdb-exporter';
export const NAMESPACE = 'monitoring';
/** Every values file of the chart's ci/ folder (the chart-testing convention). */
export const CI_FILES = readdirSync(join(CHART, 'ci')).filter((f) => f.endsWith('.yaml')).sort();
/** The least a release needs (the image, a stack, its Secret): what `values` are laid over unless `files` are given. */
export const MINIMAL = 'minimal-values.yaml';

export interface HelmRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let home: string | undefined;
function helmEnv(): NodeJS.ProcessEnv {
  home ??= mkdtempSync(join(tmpdir(), 'cmdb-helm-home-'));
  return { PATH: process.env.PATH, HOME: home, HELM_CACHE_HOME: join(home, 'cache'), HELM_CONFIG_HOME: join(home, 'config'), HELM_DATA_HOME: join(home, 'data') };
}

/** Removes the private Helm home (afterAll). */
export function cleanHelmHome(): void {
  if (home) rmSync(home, { recursive: true, force: true });
  home = undefined;
}

/** Runs Helm `major` with `args`; `stdin` is given to it (for `-f -`). Never throws on an exit code. */
export function helm(major: HelmMajor, args: readonly string[], stdin?: string): Promise<HelmRun> {
  const binary = helmBinary(major);
  return new Promise((resolve, reject) => {
    const child = execFile(binary, [...args], { env: helmEnv(), timeout: 60_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      // A non-zero exit is an answer (a refusal to test); failing to start Helm is not.
      const code: unknown = err ? (err as { code?: unknown }).code : 0;
      if (typeof code === 'number') resolve({ code, stdout, stderr });
      else reject(err ?? new Error('helm did not run'));
    });
    child.stdin?.end(stdin ?? '');
  });
}

/**
 * `helm template` of the chart with these values files (paths under ci/ or absolute; by default
 * ci/minimal-values.yaml, `[]` for the chart's defaults alone) and extra values (JSON, as -f -).
 */
export async function template(major: HelmMajor, opts: { files?: readonly string[]; values?: unknown; release?: string; namespace?: string } = {}): Promise<HelmRun> {
  const args = ['template', opts.release ?? RELEASE, CHART, '--namespace', opts.namespace ?? NAMESPACE];
  for (const f of opts.files ?? [MINIMAL]) args.push('-f', f.startsWith('/') ? f : join(CHART, 'ci', f));
  if (opts.values !== undefined) args.push('-f', '-');
  return helm(major, args, opts.values === undefined ? undefined : JSON.stringify(opts.values));
}

/** The objects `helm template` renders; throws with Helm's message when it refuses. */
export async function render(major: HelmMajor, opts: Parameters<typeof template>[1] = {}): Promise<Obj[]> {
  const r = await template(major, opts);
  if (r.code !== 0) throw new Error(`helm ${major} template failed (${r.code}): ${r.stderr}`);
  return parseObjects(r.stdout);
}
