/**
 * Writes the Grafana dashboards under grafana/dashboards from scripts/dashboards/.
 *
 *   npm run dashboards                       regenerate
 *   npx tsx scripts/gen-dashboards.ts --check  exit 1 if a file differs from what would be generated
 */
import { renderDashboards } from './dashboards/index.js';
import { isMain, writeOrCheck } from './generated.js';

if (isMain(import.meta.url)) {
  process.exitCode = writeOrCheck(renderDashboards(), process.argv.slice(2), 'npm run dashboards');
}
