/**
 * Questions the end-to-end tests ask Prometheus about the exporter's data (which connector is
 * healthy, which Action last succeeded, what Grafana's variables would be), and every dashboard
 * query of grafana/dashboards with its variables substituted.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { dashboardQueries } from '../../dashboards/checker.js';
import { GRAFANA_VALUES, substitute } from '../../dashboards/promql.js';
import { JOB, type PrometheusApi } from './prometheus.js';
import { REPO_ROOT } from './tools.js';

/** yyyy-mm-dd (UTC) of a time in ms, the form setLicenseExpiry takes. */
export function isoDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Grafana's variables as a user of this stack would set them, with a connector that exists. */
export async function grafanaValues(prom: PrometheusApi, stack: string): Promise<Record<string, string>> {
  const info = await prom.query(`cmdb_connector_info{job="${JOB}", stack="${stack}"}`);
  const key = (m: Record<string, string>) => `${m.connector ?? ''}\u0000${m.profile ?? ''}`;
  const first = info.map((s) => s.metric).sort((a, b) => key(a).localeCompare(key(b)))[0];
  if (!first?.connector) throw new Error(`no connector in Prometheus: ${JSON.stringify(info)}`);
  return { ...GRAFANA_VALUES, job: JOB, instance: first.instance ?? '', stack, connector: first.connector, profile: first.profile ?? '' };
}

/** Every panel target and query variable of grafana/dashboards/*.json, variables substituted. */
export function allDashboardQueries(values: Record<string, string>): Array<{ where: string; expr: string }> {
  const folder = join(REPO_ROOT, 'grafana/dashboards');
  return readdirSync(folder)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .flatMap((file) => {
      const dashboard = JSON.parse(readFileSync(join(folder, file), 'utf8')) as Record<string, unknown>;
      return dashboardQueries(dashboard).uses.map((use) => {
        const s = substitute(use.expr, values);
        if (s.unknown.length > 0) throw new Error(`${file} ${use.where}: no value for $${s.unknown.join(', $')}`);
        return { where: `${file} ${use.where}`, expr: s.text };
      });
    });
}

/** A connector every profile of which is healthy now, so that its alert can only come from the switch. */
export async function healthyConnector(prom: PrometheusApi, stack: string): Promise<string> {
  const health = await prom.query(`cmdb_connector_health{job="${JOB}", stack="${stack}"} == 1`);
  const unhealthy = new Set(health.filter((s) => s.metric.health !== 'ok').map((s) => s.metric.connector));
  const ok = health.filter((s) => s.metric.health === 'ok' && !unhealthy.has(s.metric.connector)).map((s) => s.metric.connector ?? '');
  const name = ok.sort()[0];
  if (!name) throw new Error(`no healthy connector: ${JSON.stringify(health.map((s) => s.metric))}`);
  return name;
}

/** An Action whose newest job succeeded. */
export async function succeededAction(prom: PrometheusApi, stack: string): Promise<string> {
  const ok = await prom.query(`cmdb_action_last_job_status{job="${JOB}", stack="${stack}", status="SUCCESS"} == 1`);
  const id = ok.map((s) => s.metric.action_id ?? '').sort()[0];
  if (!id) throw new Error(`no Action whose newest job succeeded: ${JSON.stringify(ok)}`);
  return id;
}
