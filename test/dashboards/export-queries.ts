/**
 * Prints every dashboard query, with Grafana variables replaced by realistic values, as a
 * Prometheus rule file: scripts/test-rules.sh runs `promtool check rules` over it, so each query
 * is also parsed by the Prometheus the project targets (lezer-promql knows newer syntax).
 *
 *   npx tsx test/dashboards/export-queries.ts > /tmp/dashboard-queries.yml
 */
import { stringify } from 'yaml';
import { buildDashboards } from '../../scripts/dashboards/index.js';
import { dashboardQueries } from './checker.js';
import { GRAFANA_VALUES, substitute } from './promql.js';

export function dashboardQueryRules(): string {
  const rules: Array<{ record: string; expr: string }> = [];
  for (const [file, dashboard] of buildDashboards()) {
    const { uses } = dashboardQueries(dashboard as unknown as Record<string, unknown>);
    uses.forEach((use, i) => {
      const name = file.replace(/^.*\//, '').replace(/\.json$/, '').replace(/\W/g, '_');
      rules.push({ record: `dashboard_query:${name}:${i + 1}`, expr: substitute(use.expr, GRAFANA_VALUES).text });
    });
  }
  return stringify({ groups: [{ name: 'dashboard-queries', rules }] }, { lineWidth: 0 });
}

process.stdout.write(dashboardQueryRules());
