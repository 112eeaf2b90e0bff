/** The generated Prometheus rules: no drift, valid PromQL on served metrics, mixin conventions. */
import { readFileSync, readdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROMETHEUS_RULE_FILE, THRESHOLDS, alertGroups, recordingGroups, renderRuleFiles } from '../../scripts/gen-rules.js';
import type { AlertRule, Thresholds } from '../../scripts/rules/model.js';
import { REPO, RULES_DIR, knownMetrics } from '../dashboards/metrics.js';
import type { MetricInfo } from '../dashboards/metrics.js';
import { analyse } from '../dashboards/promql.js';
import { CONNECTOR_CAUSE, CONNECTOR_EFFECTS, PROBLEM_OF, PROBLEM_TITLES, STACK_CAUSES } from '../../scripts/rules/problems.js';

const alerts = alertGroups().flatMap((g) => g.rules);
const records = recordingGroups().flatMap((g) => g.rules);
const allExprs = [...alerts.map((a) => [a.alert, a.expr]), ...records.map((r) => [r.record, r.expr])] as const;

/** Labels an alert's description must name, from the labels its expression keeps (its summary is static). */
const OBJECT_LABELS: Readonly<Record<string, readonly string[]>> = {
  CmdbExporterDown: ['instance'],
  CmdbExporterAbsent: ['job'],
  CmdbEndpointDown: ['stack', 'endpoint'],
  CmdbEndpointDataStale: ['stack', 'endpoint'],
  CmdbEndpointForbidden: ['stack', 'endpoint'],
  CmdbUnreachable: ['stack'],
  CmdbTokenRejected: ['stack'],
  CmdbRateBudgetNearlyExhausted: ['stack'],
  CmdbRateLimited: ['stack'],
  CmdbStackPaused: ['stack'],
  CmdbSeriesDropped: ['stack'],
  CmdbConfigReloadFailed: ['instance'],
  CmdbLicenseExpiresSoon: ['stack'],
  CmdbLicenseExpiresVerySoon: ['stack'],
  CmdbLicenseExpired: ['stack'],
  CmdbAssetsDropped: ['stack'],
  CmdbUsersDropped: ['stack'],
  CmdbQueryCountRose: ['stack', 'query'],
  CmdbQueryRefused: ['stack', 'query'],
  CmdbConnectorError: ['stack', 'connector', 'profile'],
  // Per connector over all its profiles: no profile label.
  CmdbConnectorNotRun: ['stack', 'connector'],
  CmdbMergerStale: ['stack', 'merger'],
  CmdbConnectorNoOutput: ['stack', 'connector', 'profile'],
  CmdbConnectorMissingFields: ['stack', 'connector', 'profile'],
  CmdbIngestionRunFailed: ['stack'],
  CmdbIngestionRunTooLong: ['stack'],
  CmdbIngestionNoRecentSuccess: ['stack'],
  CmdbIngestionNoSuccessListed: ['stack'],
  CmdbIngestionOverdue: ['stack'],
  CmdbActionJobFailed: ['stack', 'action_id', 'action_name'],
  CmdbActionOverdue: ['stack', 'action_id', 'action_name'],
};

let known: Map<string, MetricInfo>;
beforeAll(async () => {
  known = await knownMetrics();
});

function jobMatcher(t: Thresholds): { label: string; op: string; value: string } {
  const m = /^(\w+)\s*(=~|!~|!=|=)\s*"(.*)"$/.exec(t.jobSelector);
  if (!m) throw new Error(`jobSelector ${t.jobSelector} is not one label matcher`);
  return { label: m[1] ?? '', op: m[2] ?? '', value: m[3] ?? '' };
}

describe('rule files', () => {
  it('the committed files equal what scripts/gen-rules.ts generates (run npx tsx scripts/gen-rules.ts)', () => {
    const generated = renderRuleFiles();
    const committed = [
      ...readdirSync(RULES_DIR).filter((n) => /^cmdb-.*\.yml$/.test(n)).map((n) => `config/prometheus/${n}`),
      PROMETHEUS_RULE_FILE,
    ];
    expect(committed.sort()).toEqual([...generated.keys()].sort());
    for (const [file, text] of generated) expect(readFileSync(new URL(file, REPO), 'utf8'), file).toBe(text);
  });

  it('the job selector is written once: changing it changes every selector', () => {
    const t = { ...THRESHOLDS, jobSelector: 'job="cmdb-prod"' };
    const exprs = [...alertGroups(t), ...recordingGroups(t)].flatMap((g) => g.rules.map((r) => r.expr));
    const selectors = exprs.flatMap((e) => analyse(e).selectors);
    expect(selectors.length).toBeGreaterThan(40);
    for (const s of selectors) expect(s.matchers, s.text).toContainEqual({ label: 'job', op: '=', rawValue: 'cmdb-prod' });
  });

  it('the runbook base URL is written once: changing it changes every runbook_url', () => {
    const base = 'https://wiki.example.org/cmdb/alerts';
    for (const a of alertGroups({ ...THRESHOLDS, runbookBaseUrl: base }).flatMap((g) => g.rules)) {
      expect(a.annotations.runbook_url).toBe(`${base}#${a.alert.toLowerCase()}`);
    }
  });

  it('THRESHOLDS.for lists exactly the alerts that take their for: from it', () => {
    const names = new Set(alerts.map((a) => a.alert));
    expect(Object.keys(THRESHOLDS.for).filter((n) => !names.has(n))).toEqual([]);
    for (const a of alerts) if (a.alert in THRESHOLDS.for) expect(a.for).toBe(THRESHOLDS.for[a.alert]);
  });

  it('alert names are unique', () => {
    const names = alerts.map((a) => a.alert);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('rule expressions', () => {
  const job = jobMatcher(THRESHOLDS);

  it.each(allExprs)('%s parses, uses served metrics and labels, and selects the exporter job', (_name, expr) => {
    const result = analyse(expr);
    expect(result.errors).toEqual([]);
    expect(result.selectors.length).toBeGreaterThan(0);
    for (const s of result.selectors) {
      const info = s.metric ? known.get(s.metric) : undefined;
      expect(info, `unknown metric in ${s.text}`).toBeDefined();
      expect(s.matchers, s.text).toContainEqual({ label: job.label, op: job.op, rawValue: job.value });
      for (const m of s.matchers) {
        if (info?.labels && m.label !== 'job') expect(info.labels, `${s.metric} has no label ${m.label}`).toContain(m.label);
      }
    }
  });

  // Prometheus 3's range selectors are left-open, 2's closed: rate(), irate() and increase() see one
  // sample more or fewer on either side of a scrape on the window's edge and extrapolate the rest.
  // The rules count with counted() (scripts/rules/model.ts), the same on both; docs/alerts.md says why.
  it.each(allExprs)('%s counts without rate(), irate() or increase()', (_name, expr) => {
    expect(analyse(expr).rateCalls).toEqual([]);
  });
});

describe('problems (the label Alertmanager groups by) and causes', () => {
  it('every alert has the problem label of PROBLEM_OF, and PROBLEM_OF names no other alert', () => {
    expect(Object.fromEntries(alerts.map((a) => [a.alert, a.labels.problem]))).toEqual(PROBLEM_OF);
  });

  it('every problem has a title for the notifications', () => {
    expect(Object.keys(PROBLEM_TITLES).sort()).toEqual([...new Set(Object.values(PROBLEM_OF))].sort());
  });

  it('the causes are critical alerts that keep the stack label; the connector cause and its effects exist', () => {
    for (const cause of STACK_CAUSES) {
      const a = alerts.find((x) => x.alert === cause);
      expect(a?.labels.severity, cause).toBe('critical');
      expect(a?.annotations.description, cause).toContain('$labels.stack');
    }
    const names = alerts.map((a) => a.alert);
    for (const name of [CONNECTOR_CAUSE, ...CONNECTOR_EFFECTS]) expect(names).toContain(name);
  });
});

describe('alert conventions', () => {
  it.each(alerts.map((a) => [a.alert, a] as const))('%s', (name, a: AlertRule) => {
    expect(name).toMatch(/^Cmdb[A-Z][A-Za-z0-9]+$/);
    expect(['critical', 'warning', 'info']).toContain(a.labels.severity);
    expect(a.for).toMatch(/^(\d+[smhdwy])+$/);
    expect(Object.keys(a.annotations).sort()).toEqual(['description', 'runbook_url', 'summary']);
    expect(a.annotations.runbook_url).toBe(`${THRESHOLDS.runbookBaseUrl}#${name.toLowerCase()}`);
    const labels = OBJECT_LABELS[name];
    expect(labels, `add ${name} to OBJECT_LABELS`).toBeDefined();
    // mixtool's guideline: a short static summary naming the problem, every specific in the description.
    expect(a.annotations.summary).toMatch(/^[A-Z][^{}]+\.$/);
    expect(a.annotations.summary.length, 'a short summary').toBeLessThanOrEqual(60);
    for (const label of labels ?? []) expect(a.annotations.description, 'description').toContain(`$labels.${label}`);
  });

  it.each(records.map((r) => [r.record] as const))('recording rule %s is named level:metric:operations', (name) => {
    const [level, metric, operations] = name.split(':');
    expect(name.split(':')).toHaveLength(3);
    // Every recording rule keeps `stack` (the dashboards and alerts rely on it), so the level names it.
    expect(level).toMatch(/^stack(_[a-z]+)*$/);
    expect(metric).toMatch(/^cmdb_[a-z0-9_]+$/);
    expect(metric).not.toMatch(/_total$/);
    expect(operations).toMatch(/^[a-z0-9_]+$/);
  });

  it('the stack selector narrows every selector of a series with a stack label, and no other', () => {
    const t = { ...THRESHOLDS, stackSelector: 'stack=~"prod-.*"' };
    const exprs = [...alertGroups(t), ...recordingGroups(t)].flatMap((g) => g.rules.map((r) => r.expr));
    const selectors = exprs.flatMap((e) => analyse(e).selectors);
    let narrowed = 0;
    for (const s of selectors) {
      const name = s.metric ?? '';
      const stackless = name === 'up' || name === 'cmdb_config_last_reload_successful';
      const has = s.matchers.some((m) => m.label === 'stack' && m.op === '=~' && m.rawValue === 'prod-.*');
      expect(has, s.text).toBe(!stackless);
      if (has) narrowed++;
    }
    expect(narrowed).toBeGreaterThan(40);
  });
});
