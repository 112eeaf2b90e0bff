/**
 * The shipped alerts and dashboards by the monitoring-mixin linters' rules (the ports in
 * test/rules/mixtool.ts and test/dashboards/linter.ts): no finding but the deliberate exceptions of
 * mixin/.lint, each with its reason and each still needed. And the ports themselves: a clean example
 * passes every rule, and each rule reports the mistake it is about.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_LINTER_RULES, lintDashboard } from '../dashboards/linter.js';
import { MIXTOOL_RULES, lintAlertGroups, lintDashboardIdentity } from '../rules/mixtool.js';
import { applyLintConfig, entryMatches, missingReasons, parseLintConfig } from './lint-config.js';
import { LINT_FILE, REPO, allFindings, remainingFindings, shippedFiles, shippedLintConfig } from './lint.js';

type Obj = Record<string, unknown>;

describe('the shipped alerts and dashboards', () => {
  const findings = allFindings(shippedFiles());
  const config = shippedLintConfig();

  it('have no finding of mixtool\'s or dashboard-linter\'s rules but the exclusions of mixin/.lint', () => {
    expect(remainingFindings(findings, config).map((f) => `${f.file}: [${f.rule}] ${f.message}`)).toEqual([]);
  });

  it('every exclusion gives its reason and still excludes a finding', () => {
    expect(missingReasons(config)).toEqual([]);
    for (const [rule, r] of config.exclusions) {
      expect(findings.some((f) => f.rule === rule), `${rule} excludes nothing`).toBe(true);
      for (const e of r.entries) expect(findings.some((f) => f.rule === rule && entryMatches(e, f)), `${rule} ${JSON.stringify(e)} matches no finding`).toBe(true);
    }
    expect(config.warnings.size, 'no rule is downgraded to a warning').toBe(0);
  });

  it('dashboard-linter reads the same .lint beside the dashboards', () => {
    expect(readFileSync(new URL('grafana/dashboards/.lint', REPO), 'utf8')).toBe(readFileSync(LINT_FILE, 'utf8'));
  });

  it('every alert was linted and every dashboard panel with queries too', () => {
    const files = shippedFiles();
    expect(files.alerts.groups.flatMap((g) => g.rules)).toHaveLength(31);
    expect(files.dashboards.size).toBe(3);
  });
});

const DS = { type: 'prometheus', uid: '${datasource}' };

function variable(name: string, query: string): Obj {
  return { name, label: name[0]!.toUpperCase() + name.slice(1), type: 'query', query, datasource: DS, multi: true, allValue: '.+', refresh: 2 };
}

function panel(title: string, expr: string, extra: Obj = {}): Obj {
  return {
    id: 2,
    type: 'timeseries',
    title,
    description: 'Requests per second by outcome.',
    datasource: DS,
    fieldConfig: { defaults: { unit: 'reqps' }, overrides: [] },
    targets: [{ refId: 'A', datasource: DS, expr }],
    ...extra,
  };
}

const GOOD = 'sum by (outcome) (rate(cmdb_endpoint_requests_total{job=~"$job", instance=~"$instance"}[$__rate_interval]))';

/** A dashboard that passes every rule of dashboard-linter. */
function good(expr = GOOD): Obj {
  return {
    uid: 'x',
    title: 'Example',
    editable: false,
    templating: {
      list: [
        { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus' },
        variable('job', 'label_values(cmdb_exporter_build_info, job)'),
        variable('instance', 'label_values(cmdb_exporter_build_info{job=~"$job"}, instance)'),
      ],
    },
    panels: [{ id: 1, type: 'row', title: 'Row', panels: [] }, panel('Requests', expr)],
  };
}

const p = (d: Obj) => (d.panels as Obj[])[1]!;
const vars = (d: Obj) => (d.templating as { list: Obj[] }).list;

describe('the dashboard-linter port', () => {
  it('finds nothing in a dashboard that follows every rule', () => {
    expect(lintDashboard(good())).toEqual([]);
    expect(lintDashboard(good('histogram_quantile(0.9, sum by (le) (rate(x_bucket{job=~"$job", instance=~"$instance"}[$__rate_interval])))'))).toEqual([]);
    // increase() and *_over_time() may take another range (upstream only asks it of rate and irate).
    expect(lintDashboard(good('max_over_time(x{job=~"$job", instance=~"$instance"}[1h])'))).toEqual([]);
  });

  const MISTAKES: ReadonlyArray<[string, (d: Obj) => void, string, string]> = [
    ['no datasource variable', (d) => vars(d).shift(), 'template-datasource-rule', 'does not have a templated data source'],
    ['a datasource variable with another name', (d) => { vars(d)[0]!.name = 'ds'; }, 'template-datasource-rule', "should be named 'prometheus_datasource', or 'datasource'"],
    ['no job variable', (d) => vars(d).splice(1, 1), 'template-job-rule', 'is missing the job template'],
    ['a job variable without allValue .+', (d) => { delete vars(d)[1]!.allValue; }, 'template-job-rule', "allValue should be '.+'"],
    ['a single-select instance variable', (d) => { vars(d)[2]!.multi = false; }, 'template-instance-rule', 'should be a multi select'],
    ['an instance variable on a fixed datasource', (d) => { vars(d)[2]!.datasource = { uid: 'abc' }; }, 'template-instance-rule', "should use datasource '$datasource'"],
    ['a variable query that is no PromQL', (d) => { vars(d)[2]!.query = 'label_values(up{, instance)'; }, 'template-label-promql-rule', "template 'instance' invalid templated label"],
    ['a variable query with an unknown function', (d) => { vars(d)[2]!.query = 'values(up, instance)'; }, 'template-label-promql-rule', "invalid 'function': values"],
    ['a variable not refreshed on time range change', (d) => { vars(d)[1]!.refresh = 1; }, 'template-on-time-change-reload-rule', "should be set to be refreshed 'On Time Range Change (value 2)'"],
    ['a panel on a fixed datasource', (d) => { p(d).datasource = { type: 'prometheus', uid: 'P1' }; }, 'panel-datasource-rule', "does not use a templated datasource, uses 'P1'"],
    ['a panel without a description', (d) => { delete p(d).description; }, 'panel-title-description-rule', 'has missing title or description'],
    ['a panel without a unit', (d) => { p(d).fieldConfig = { defaults: {}, overrides: [] }; }, 'panel-units-rule', "has no or invalid units defined: ''"],
    ['a panel with a unit Grafana does not know', (d) => { p(d).fieldConfig = { defaults: { unit: 'requests' } }; }, 'panel-units-rule', "has no or invalid units defined: 'requests'"],
    ['a panel without targets', (d) => { delete p(d).targets; }, 'panel-no-targets-rule', 'has no targets'],
    ['a Loki query', (d) => { (p(d).targets as Obj[])[0]!.datasource = { type: 'loki', uid: '${datasource}' }; }, 'target-logql-rule', 'uses LogQL'],
    ['a query that does not parse', (d) => { (p(d).targets as Obj[])[0]!.expr = GOOD.slice(0, -1); }, 'target-promql-rule', 'invalid PromQL query'],
    ['rate() over a fixed range', (d) => { (p(d).targets as Obj[])[0]!.expr = GOOD.replace('$__rate_interval', '5m'); }, 'target-rate-interval-rule', 'should use $__rate_interval'],
    ['a selector without the job matcher', (d) => { (p(d).targets as Obj[])[0]!.expr = 'x{instance=~"$instance"}'; }, 'target-job-rule', 'job selector not found'],
    ['a fixed job matcher', (d) => { (p(d).targets as Obj[])[0]!.expr = 'x{job="cmdb-exporter", instance=~"$instance"}'; }, 'target-job-rule', 'job selector is ="cmdb-exporter"'],
    ['a selector without the instance matcher', (d) => { (p(d).targets as Obj[])[0]!.expr = 'x{job=~"$job"}'; }, 'target-instance-rule', 'instance selector not found'],
    ['a counter without rate', (d) => { (p(d).targets as Obj[])[0]!.expr = 'sum(cmdb_endpoint_requests_total{job=~"$job", instance=~"$instance"})'; }, 'target-counter-agg-rule', 'is not aggregated with rate, irate, or increase'],
    ['an editable dashboard', (d) => { d.editable = true; }, 'uneditable-dashboard', "is editable, it should be set to 'editable: false'"],
  ];

  it.each(MISTAKES)('reports %s', (_name, mutate, rule, message) => {
    const d = good();
    mutate(d);
    const found = lintDashboard(d);
    expect(found.filter((f) => f.rule === rule).map((f) => f.message).join('\n')).toContain(message);
  });

  it('leaves out of the units rule the panels that show words: value mappings, non-numeric stat fields', () => {
    const d = good();
    p(d).fieldConfig = { defaults: { mappings: [{ type: 'value', options: { 1: { text: 'up' } } }] } };
    expect(lintDashboard(d)).toEqual([]);
    p(d).type = 'stat';
    p(d).fieldConfig = { defaults: {} };
    p(d).options = { reduceOptions: { fields: '/^status$/' } };
    expect(lintDashboard(d)).toEqual([]);
  });

  it('has a mistake above for every rule of the upstream rule set but target-logql-auto-rule (a Loki query is refused whole)', () => {
    expect(DASHBOARD_LINTER_RULES).toHaveLength(17);
    expect(new Set(MISTAKES.map(([, , rule]) => rule))).toEqual(new Set(DASHBOARD_LINTER_RULES.filter((r) => r !== 'target-logql-auto-rule')));
  });
});

const ALERT = {
  alert: 'CmdbConnectorError',
  labels: { severity: 'warning' },
  annotations: { summary: 'CMDB connector run failed.', description: 'Connector {{ $labels.connector }} failed.', runbook_url: 'https://x/#a' },
};

describe('the mixtool port', () => {
  const lint = (rule: Obj, name = 'cmdb.alerts', count = 1) => lintAlertGroups([{ name, rules: Array.from({ length: count }, () => rule) }]);

  it('finds nothing in an alert that follows the guidelines', () => {
    expect(lint(ALERT)).toEqual([]);
  });

  const MISTAKES: ReadonlyArray<[string, Obj, string, string?, number?]> = [
    ['a name that is not CamelCase', { ...ALERT, alert: 'cmdb_connector_error' }, 'alert-name-camelcase'],
    ['a name over 40 characters', { ...ALERT, alert: `Cmdb${'Connector'.repeat(5)}` }, 'alert-name-length'],
    ['a severity outside critical, warning, info', { ...ALERT, labels: { severity: 'page' } }, 'alert-severity-rule'],
    ['no description', { ...ALERT, annotations: { summary: ALERT.annotations.summary } }, 'alert-description-missing-rule'],
    ['a description without templates', { ...ALERT, annotations: { ...ALERT.annotations, description: 'A connector failed.' } }, 'alert-description-templating'],
    ['no summary', { ...ALERT, annotations: { description: ALERT.annotations.description } }, 'alert-summary-missing-rule'],
    ['a templated summary', { ...ALERT, annotations: { ...ALERT.annotations, summary: 'CMDB connector {{ $labels.connector }} failed.' } }, 'alert-summary-templating'],
    ['a summary that is no sentence', { ...ALERT, annotations: { ...ALERT.annotations, summary: 'CMDB connector run failed' } }, 'alert-summary-style'],
    ['a group of more than 20 rules', ALERT, 'alert-group-rule-count', 'cmdb.alerts', 21],
    ['a group name over 40 characters', ALERT, 'alert-group-name-length', 'cmdb-exporter.alerts-of-every-connector-and-stack'],
  ];

  it.each(MISTAKES)('reports %s', (_name, rule, expected, group, count) => {
    expect(lint(rule, group, count).map((f) => f.rule)).toContain(expected);
  });

  it('has a mistake above for each of its ten rules, and checks that a dashboard has a title and a uid', () => {
    expect(new Set(MISTAKES.map(([, , rule]) => rule))).toEqual(new Set(MIXTOOL_RULES));
    expect(lintDashboardIdentity('x.json', {}).map((f) => f.rule)).toEqual(['dashboard-title', 'dashboard-uid']);
  });
});

describe('the .lint file', () => {
  const config = parseLintConfig(`exclusions:
  panel-units-rule:
    reason: words
    entries:
      - dashboard: A
        panel: P
  alert-summary-style:
    entries:
      - alert: CmdbX
        reason: because
warnings:
  template-job-rule:
`);

  it('excludes by dashboard and panel title, by alert name, and downgrades a whole rule', () => {
    expect(applyLintConfig(config, { rule: 'panel-units-rule', dashboard: 'A', panel: 'P' })).toBe('excluded');
    expect(applyLintConfig(config, { rule: 'panel-units-rule', dashboard: 'A', panel: 'Q' })).toBe('unchanged');
    expect(applyLintConfig(config, { rule: 'alert-summary-style', alert: 'CmdbX' })).toBe('excluded');
    expect(applyLintConfig(config, { rule: 'alert-summary-style', alert: 'CmdbY' })).toBe('unchanged');
    expect(applyLintConfig(config, { rule: 'template-job-rule', dashboard: 'A' })).toBe('warning');
  });

  it('asks a reason of every exception and refuses keys the linters do not read', () => {
    expect(missingReasons(config)).toEqual(['warnings.template-job-rule: no reason']);
    expect(() => parseLintConfig('exclusions:\n  x:\n    entries:\n      - panels: P\n')).toThrow('unknown key panels');
    expect(() => parseLintConfig('exclusion:\n  x:\n')).toThrow('unknown key(s) exclusion');
  });
});
