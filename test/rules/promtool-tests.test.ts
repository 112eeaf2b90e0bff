/**
 * Coverage of the promtool unit tests in config/prometheus/tests (scripts/test-rules.sh runs
 * them): every alert has a case that fires and one just short of firing, asserting labels and
 * annotations; every recording rule is evaluated.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { alertGroups, recordingGroups } from '../../scripts/gen-rules.js';
import { RULES_DIR } from '../dashboards/metrics.js';

interface ExpAlert {
  exp_labels?: Record<string, string>;
  exp_annotations?: Record<string, string>;
}
interface AlertCase {
  alertname: string;
  eval_time: string;
  exp_alerts?: ExpAlert[];
}
interface TestGroup {
  name?: string;
  alert_rule_test?: AlertCase[];
  promql_expr_test?: Array<{ expr: string }>;
}
interface TestFile {
  rule_files: string[];
  tests: TestGroup[];
}

const TESTS_DIR = new URL('tests/', RULES_DIR);
const files = readdirSync(TESTS_DIR)
  .filter((n) => n.endsWith('.yml'))
  .map((name) => [name, parse(readFileSync(new URL(name, TESTS_DIR), 'utf8')) as TestFile] as const);
const cases = files.flatMap(([, f]) => f.tests.flatMap((t) => t.alert_rule_test ?? []));
const alerts = alertGroups().flatMap((g) => g.rules);

describe('promtool unit tests', () => {
  it.each(files.map(([name, f]) => [name, f] as const))('%s loads existing rule files and names its tests', (_name, f) => {
    expect(f.rule_files.length).toBeGreaterThan(0);
    for (const rf of f.rule_files) expect(existsSync(new URL(rf, TESTS_DIR)), rf).toBe(true);
    for (const t of f.tests) expect(t.name, 'every test group has a name').toBeTruthy();
  });

  it.each(alerts.map((a) => [a.alert] as const))('%s has a firing case and a case just short of firing', (alert) => {
    const mine = cases.filter((c) => c.alertname === alert);
    const firing = mine.filter((c) => (c.exp_alerts ?? []).length > 0);
    expect(firing.length, 'a case that fires').toBeGreaterThan(0);
    expect(mine.some((c) => (c.exp_alerts ?? []).length === 0), 'a case that does not fire yet').toBe(true);
    for (const c of firing) {
      for (const exp of c.exp_alerts ?? []) {
        expect(exp.exp_labels?.severity, 'asserts the severity label').toBeDefined();
        expect(Object.keys(exp.exp_annotations ?? {}).sort(), 'asserts every annotation').toEqual([
          'description',
          'runbook_url',
          'summary',
        ]);
      }
    }
  });

  it('no case names an alert that does not exist', () => {
    const names = new Set(alerts.map((a) => a.alert));
    expect(cases.map((c) => c.alertname).filter((n) => !names.has(n))).toEqual([]);
  });

  it.each(recordingGroups().flatMap((g) => g.rules.map((r) => [r.record] as const)))('recording rule %s is evaluated', (record) => {
    const exprs = files.flatMap(([, f]) => f.tests.flatMap((t) => (t.promql_expr_test ?? []).map((e) => e.expr)));
    expect(exprs.some((e) => e.includes(record))).toBe(true);
  });
});
