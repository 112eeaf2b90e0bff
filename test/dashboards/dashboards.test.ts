import { readFileSync, readdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildDashboards, renderDashboards } from '../../scripts/dashboards/index.js';
import { allPanels, checkDashboard, checkDashboards, dashboardQueries } from './checker.js';
import { REPO, knownMetrics } from './metrics.js';
import type { MetricInfo } from './metrics.js';

type Obj = Record<string, unknown>;

const DASHBOARD_DIR = new URL('grafana/dashboards/', REPO);
const read = (path: string) => readFileSync(new URL(path, REPO), 'utf8');

function committedDashboards(): Map<string, Obj> {
  const files = new Map<string, Obj>();
  for (const name of readdirSync(DASHBOARD_DIR).filter((n) => n.endsWith('.json')).sort()) {
    files.set(`grafana/dashboards/${name}`, JSON.parse(readFileSync(new URL(name, DASHBOARD_DIR), 'utf8')) as Obj);
  }
  return files;
}

let known: Map<string, MetricInfo>;
beforeAll(async () => {
  known = await knownMetrics();
});

describe('generated dashboards', () => {
  it('the committed JSON equals what scripts/gen-dashboards.ts generates (run npm run dashboards)', () => {
    const generated = renderDashboards();
    expect([...committedDashboards().keys()]).toEqual([...generated.keys()].sort());
    for (const [file, text] of generated) expect(read(file), file).toBe(text);
  });

  it('generating twice gives byte-identical output', () => {
    expect([...renderDashboards()]).toEqual([...renderDashboards()]);
  });
});

describe('dashboard checks without Grafana', () => {
  it('every committed dashboard passes every check', () => {
    expect(checkDashboards(committedDashboards(), known)).toEqual([]);
  });

  it.each([...buildDashboards()].map(([file, d]) => [file, d] as const))(
    '%s has panels with queries and every query is checked',
    (_file, dashboard) => {
      const d = dashboard as unknown as Obj;
      const { uses } = dashboardQueries(d);
      const targets = allPanels(d).flatMap((p) => (Array.isArray(p.targets) ? p.targets : []));
      const queryVariables = dashboard.templating.list.filter((v) => v.type === 'query');
      expect(targets.length).toBeGreaterThan(10);
      // Every target and every query variable is one checked use: nothing escapes the checks.
      expect(uses.length).toBe(targets.length + queryVariables.length);
      expect(checkDashboard(d, known)).toEqual([]);
    },
  );
});

describe('Grafana provisioning', () => {
  const yaml = (path: string) => parse(read(path)) as Obj;

  it('provisions the compose Prometheus as a prometheus datasource with the scrape interval', () => {
    const file = yaml('grafana/provisioning/datasources/prometheus.yml');
    const prometheus = yaml('config/prometheus/prometheus.yml');
    expect(file.apiVersion).toBe(1);
    expect(file.datasources).toEqual([
      expect.objectContaining({
        type: 'prometheus',
        url: 'http://prometheus:9090',
        access: 'proxy',
        jsonData: { timeInterval: (prometheus.global as Obj).scrape_interval },
      }),
    ]);
  });

  it('provisions the dashboards folder with a file provider', () => {
    const file = yaml('grafana/provisioning/dashboards/cmdb.yml');
    expect(file.apiVersion).toBe(1);
    expect(file.providers).toEqual([
      expect.objectContaining({ type: 'file', options: expect.objectContaining({ path: '/var/lib/grafana/dashboards' }) }),
    ]);
  });
});
