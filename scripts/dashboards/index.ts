/** Every generated dashboard, by the file it is written to. */
import { connectorDetailDashboard } from './connector-detail.js';
import { exporterHealthDashboard } from './exporter-health.js';
import { overviewDashboard } from './overview.js';
import type { Dashboard } from './types.js';

export const DASHBOARDS_DIR = 'grafana/dashboards';

export function buildDashboards(): Map<string, Dashboard> {
  return new Map([
    [`${DASHBOARDS_DIR}/cmdb-overview.json`, overviewDashboard()],
    [`${DASHBOARDS_DIR}/cmdb-connector-detail.json`, connectorDetailDashboard()],
    [`${DASHBOARDS_DIR}/cmdb-exporter-health.json`, exporterHealthDashboard()],
  ]);
}

/** File name (relative to the repository) → pretty JSON with a final newline. */
export function renderDashboards(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [file, dashboard] of buildDashboards()) files.set(file, `${JSON.stringify(dashboard, null, 2)}\n`);
  return files;
}

export type { Dashboard };
