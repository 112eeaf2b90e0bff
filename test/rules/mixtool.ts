/**
 * A port of `mixtool lint`'s rules for a mixin's alerts (monitoring-mixins/mixtool, pkg/mixer/lint.go:
 * lintPrometheusAlertGroups and lintPrometheusAlertsGuidelines, the guidelines of
 * https://monitoring.mixins.dev), and of its two checks of every dashboard (a title, a uid). Same rule
 * names, limits and regular expressions; exclusions come from the same `.lint` file, by alert name.
 */
import type { FindingContext } from '../mixin/lint-config.js';

export interface AlertFinding extends FindingContext {
  readonly severity: 'error';
  readonly message: string;
}

interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

interface Group {
  readonly name: string;
  readonly rules: readonly Rule[];
}

const CAMEL_CASE = /^([A-Z]+[a-z0-9]+)+$/;
/** Go's `\{\{.+}\}` and `^[A-Z].+\.$`: `.` matches no newline there either. */
const GO_TEMPLATE = /\{\{.+\}\}/;
const SENTENCE = /^[A-Z].+\.$/;

export const MIXTOOL_RULES = [
  'alert-group-rule-count',
  'alert-group-name-length',
  'alert-name-camelcase',
  'alert-name-length',
  'alert-severity-rule',
  'alert-description-missing-rule',
  'alert-description-templating',
  'alert-summary-missing-rule',
  'alert-summary-templating',
  'alert-summary-style',
] as const;

/** Every finding for the groups of prometheusAlerts (recording rules are skipped, as mixtool does). */
export function lintAlertGroups(groups: readonly Group[]): AlertFinding[] {
  const out: AlertFinding[] = [];
  const group = (rule: string, message: string) => out.push({ rule, severity: 'error', message });
  const alert = (rule: string, name: string, message: string) => out.push({ rule, severity: 'error', message, alert: name });
  for (const g of groups) {
    if (g.rules.length > 20) group('alert-group-rule-count', `Group '${g.name}' contains more than 20 rules (${g.rules.length})`);
    if (g.name.length > 40) group('alert-group-name-length', `Alert Group '${g.name}' name exceeds 40 characters`);
    for (const r of g.rules) {
      // Recording rules belong in prometheusRules, which mixtool evaluates but does not lint.
      if (r.alert === undefined) continue;
      const name = r.alert;
      if (!CAMEL_CASE.test(name)) alert('alert-name-camelcase', name, `Alert '${name}' name is not in camel case`);
      if (name.length > 40) alert('alert-name-length', name, `Alert '${name}' name exceeds 40 characters`);
      const severity = r.labels?.severity ?? '';
      if (!['warning', 'critical', 'info'].includes(severity)) {
        alert('alert-severity-rule', name, `Alert '${name}' severity must be 'warning', 'critical' or 'info', is currently '${severity}'`);
      }
      const description = r.annotations?.description;
      if (description === undefined) alert('alert-description-missing-rule', name, `Alert '${name}' must have annotation 'description'`);
      else if (!GO_TEMPLATE.test(description)) alert('alert-description-templating', name, `Alert ${name} annotation 'description' must use templates, is currently '${description}'`);
      const summary = r.annotations?.summary;
      if (summary === undefined) alert('alert-summary-missing-rule', name, `Alert '${name}' must have annotation 'summary'`);
      else {
        if (GO_TEMPLATE.test(summary)) alert('alert-summary-templating', name, `Alert ${name} annotation 'summary' must not use templates`);
        if (!SENTENCE.test(summary)) alert('alert-summary-style', name, `Alert ${name} annotation 'summary' must start with capital letter and end with period, is currently '${summary}'`);
      }
    }
  }
  return out;
}

/** mixtool's own checks of each dashboard of grafanaDashboards, before it runs dashboard-linter. */
export function lintDashboardIdentity(file: string, dashboard: Record<string, unknown>): AlertFinding[] {
  const out: AlertFinding[] = [];
  if (typeof dashboard.title !== 'string' || dashboard.title === '') out.push({ rule: 'dashboard-title', severity: 'error', message: `dashboard has no title: ${file}` });
  if (typeof dashboard.uid !== 'string' || dashboard.uid === '') {
    out.push({ rule: 'dashboard-uid', severity: 'error', message: `dashboard has no UID, please set one for links to work: ${file}` });
  }
  return out;
}
