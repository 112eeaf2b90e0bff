/** Every generated dashboard, by the file it is written to. */
import { connectorDetailDashboard } from './connector-detail.js';
import { exporterHealthDashboard } from './exporter-health.js';
import { overviewDashboard } from './overview.js';
import type { Dashboard } from './types.js';
import { MIXIN_DEFAULTS, type MixinConfig } from '../mixin.js';

export const DASHBOARDS_DIR = 'grafana/dashboards';

export function buildDashboards(mixin: MixinConfig = MIXIN_DEFAULTS): Map<string, Dashboard> {
  return new Map([
    [`${DASHBOARDS_DIR}/cmdb-overview.json`, overviewDashboard(mixin)],
    [`${DASHBOARDS_DIR}/cmdb-connector-detail.json`, connectorDetailDashboard(mixin)],
    [`${DASHBOARDS_DIR}/cmdb-exporter-health.json`, exporterHealthDashboard(mixin)],
  ]);
}

/** File name (relative to the repository) → pretty JSON with a final newline. */
export function renderDashboards(mixin: MixinConfig = MIXIN_DEFAULTS): Map<string, string> {
  const files = new Map<string, string>();
  for (const [file, dashboard] of buildDashboards(mixin)) files.set(file, `${JSON.stringify(dashboard, null, 2)}\n`);
  return files;
}

export type { Dashboard };
