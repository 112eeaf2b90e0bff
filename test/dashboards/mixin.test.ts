/**
 * The mixin settings (scripts/mixin.ts): job selector, stack selector and runbook base URL reach
 * every generated rule and dashboard, through flags or a config file, and the Kubernetes copies of
 * the rules and dashboards (PrometheusRule, sidecar ConfigMaps) are generated from the same source.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse } from 'yaml';
import { DASHBOARD_CONFIGMAPS_FILE, renderDashboardFiles } from '../../scripts/gen-dashboards.js';
import { PROMETHEUS_RULE_FILE, alertGroups, recordingGroups } from '../../scripts/gen-rules.js';
import { buildDashboards } from '../../scripts/dashboards/index.js';
import { MIXIN_DEFAULTS, parseGeneratorArgs, repositoryUrl } from '../../scripts/mixin.js';
import { allPanels } from './checker.js';
import { REPO } from './metrics.js';

const run = promisify(execFile);
const TSX = new URL('node_modules/.bin/tsx', REPO).pathname;
const tmp = mkdtempSync(join(tmpdir(), 'cmdb-mixin-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const read = (path: string) => readFileSync(new URL(path, REPO), 'utf8');

describe('mixin defaults', () => {
  it('point the runbooks at docs/alerts.md of the repository named in package.json, not a placeholder', () => {
    expect(repositoryUrl()).toMatch(/^https:\/\/github\.com\/[\w.-]+\/[\w.-]+$/);
    expect(MIXIN_DEFAULTS.runbookBaseUrl).toBe(`${repositoryUrl()}/blob/main/docs/alerts.md`);
    expect(MIXIN_DEFAULTS.runbookBaseUrl).not.toContain('example');
    for (const file of ['config/prometheus/cmdb-alerts.yml', PROMETHEUS_RULE_FILE]) {
      const urls = [...read(file).matchAll(/runbook_url: (\S+)/g)].map((m) => m[1]);
      expect(urls.length).toBeGreaterThan(20);
      for (const u of urls) expect(u).toMatch(new RegExp(`^${MIXIN_DEFAULTS.runbookBaseUrl.replace(/[.]/g, '\\.')}#cmdb[a-z]+$`));
    }
  });

  it('every dashboard has job, instance and stack variables, and every query matches the instance', () => {
    for (const [file, d] of buildDashboards()) {
      const names = d.templating.list.map((v) => v.name);
      expect(names.slice(0, 4), file).toEqual(['datasource', 'job', 'instance', 'stack']);
      for (const p of allPanels(d as unknown as Record<string, unknown>)) {
        for (const t of (p.targets ?? []) as Array<{ expr: string }>) {
          if (/\{/.test(t.expr)) expect(t.expr, `${file} ${String(p.title)}`).toContain('instance=~"$instance"');
        }
      }
    }
  });
});

describe('mixin settings', () => {
  it('flags win over the config file, which wins over the defaults', () => {
    const file = join(tmp, 'mixin.yaml');
    writeFileSync(file, 'jobSelector: job="from-file"\nrunbookBaseUrl: https://wiki.example.org/cmdb\ngrafanaUrl: https://grafana.example.org/\n');
    const args = parseGeneratorArgs(['--config', file, '--job-selector', 'job="from-flag"']);
    expect(args.mixin).toEqual({ jobSelector: 'job="from-flag"', stackSelector: '', runbookBaseUrl: 'https://wiki.example.org/cmdb', grafanaUrl: 'https://grafana.example.org' });
  });

  it.each([
    [['--job-selector', 'cmdb'], 'jobSelector: must be one label matcher'],
    [['--stack-selector', 'prod'], 'stackSelector: must be empty or label matchers'],
    [['--runbook-url', 'wiki/cmdb'], 'runbookBaseUrl: must be an http(s) URL'],
    [['--grafana-url', 'https://grafana.example.com/?orgId=1'], 'grafanaUrl: must be an http(s) URL without query or fragment'],
    [['--check', '--out', '/tmp/x'], 'cannot be combined with --out'],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseGeneratorArgs(argv)).toThrow(message);
  });

  it('the stack selector limits the dashboards\' stack variable', () => {
    const mixin = { ...MIXIN_DEFAULTS, jobSelector: 'job="cmdb"', stackSelector: 'stack=~"prod-.*"' };
    for (const [, d] of buildDashboards(mixin)) {
      const byName = new Map(d.templating.list.map((v) => [v.name, v.query]));
      expect(byName.get('job')).toBe('label_values(cmdb_exporter_build_info{job="cmdb"}, job)');
      expect(byName.get('stack')).toBe('label_values(cmdb_endpoint_up{job=~"$job", instance=~"$instance", stack=~"prod-.*"}, stack)');
    }
  });

  it('npm run rules -- --job-selector … --runbook-url … --out DIR writes a custom copy', async () => {
    const out = join(tmp, 'rules');
    await run(TSX, ['scripts/gen-rules.ts', '--job-selector', 'job="cmdb"', '--stack-selector', 'stack!="lab"', '--runbook-url', 'https://wiki.example.org/cmdb', '--out', out], {
      cwd: new URL('.', REPO).pathname,
      timeout: 60_000,
    });
    const alerts = readFileSync(join(out, 'cmdb-alerts.yml'), 'utf8');
    expect(alerts).toContain('cmdb_endpoint_up{job="cmdb", stack!="lab"} == 0');
    expect(alerts).toContain('runbook_url: https://wiki.example.org/cmdb#cmdbexporterdown');
    expect(alerts).not.toContain('job="cmdb-exporter"');
    expect(readFileSync(join(out, 'prometheusrule.yaml'), 'utf8')).toContain('kind: PrometheusRule');
    // The repository's own files are untouched.
    expect(read('config/prometheus/cmdb-alerts.yml')).toContain('job="cmdb-exporter"');
  });

  it('a bad flag makes the generator exit 2 naming it', async () => {
    const failed = await run(TSX, ['scripts/gen-dashboards.ts', '--job-selector', 'nope', '--out', join(tmp, 'd')], {
      cwd: new URL('.', REPO).pathname,
      timeout: 60_000,
    }).then(() => undefined, (e: { code?: number; stderr?: string }) => e);
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain('jobSelector: must be one label matcher');
  });
});

describe('Kubernetes copies of the rules and dashboards', () => {
  it('the PrometheusRule holds exactly the groups of config/prometheus', () => {
    const rule = parse(read(PROMETHEUS_RULE_FILE)) as { kind: string; spec: { groups: unknown[] } };
    expect(rule.kind).toBe('PrometheusRule');
    expect(rule.spec.groups).toEqual(JSON.parse(JSON.stringify([...recordingGroups(), ...alertGroups()])));
  });

  it('the dashboard ConfigMaps are up to date, labelled for the Grafana sidecar, and hold the committed JSON', () => {
    const files = renderDashboardFiles();
    expect(read(DASHBOARD_CONFIGMAPS_FILE)).toBe(files.get(DASHBOARD_CONFIGMAPS_FILE));
    const maps = parseAllDocuments(read(DASHBOARD_CONFIGMAPS_FILE)).map((d) => d.toJS() as { metadata: { labels: Record<string, string> }; data: Record<string, string> });
    expect(maps).toHaveLength(3);
    for (const cm of maps) {
      expect(cm.metadata.labels.grafana_dashboard).toBe('1');
      for (const [key, json] of Object.entries(cm.data)) expect(json).toBe(read(`grafana/dashboards/${key}`));
    }
  });
});
