/**
 * The monitoring-mixin linters' rules over the files the project ships: mixtool's alert rules
 * (test/rules/mixtool.ts) over config/prometheus/cmdb-alerts.yml, mixtool's dashboard checks and
 * grafana/dashboard-linter's rules (test/dashboards/linter.ts) over grafana/dashboards/*.json, with
 * the exclusions of mixin/.lint (the file both tools read). Prints every finding and a count per rule:
 *
 *   npx tsx test/mixin/lint.ts                  findings left after the exclusions (exit 1 if any)
 *   npx tsx test/mixin/lint.ts --no-exclusions  every finding, as without a .lint file
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { parse } from 'yaml';
import { isMain } from '../../scripts/generated.js';
import { lintDashboard } from '../dashboards/linter.js';
import { lintAlertGroups, lintDashboardIdentity } from '../rules/mixtool.js';
import { EMPTY_LINT_CONFIG, applyLintConfig, readLintConfig, type FindingContext, type LintConfig } from './lint-config.js';

export const REPO = new URL('../../', import.meta.url);
export const LINT_FILE = new URL('mixin/.lint', REPO);

export interface Finding extends FindingContext {
  readonly tool: 'mixtool' | 'dashboard-linter';
  readonly file: string;
  readonly severity: 'error' | 'warning';
  readonly message: string;
}

export interface ShippedFiles {
  readonly alerts: { groups: Array<{ name: string; rules: Array<Record<string, never>> }> };
  readonly dashboards: ReadonlyMap<string, Record<string, unknown>>;
}

export function shippedFiles(): ShippedFiles {
  const dir = new URL('grafana/dashboards/', REPO);
  const dashboards = new Map(
    readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort()
      .map((n) => [`grafana/dashboards/${n}`, JSON.parse(readFileSync(new URL(n, dir), 'utf8')) as Record<string, unknown>] as const),
  );
  const alerts = parse(readFileSync(new URL('config/prometheus/cmdb-alerts.yml', REPO), 'utf8')) as ShippedFiles['alerts'];
  return { alerts, dashboards };
}

export function shippedLintConfig(): LintConfig {
  return existsSync(LINT_FILE) ? readLintConfig(LINT_FILE.pathname) : EMPTY_LINT_CONFIG;
}

/** Every finding, before exclusions. */
export function allFindings(files: ShippedFiles): Finding[] {
  const alertFile = 'config/prometheus/cmdb-alerts.yml';
  const findings: Finding[] = lintAlertGroups(files.alerts.groups).map((f) => ({ ...f, tool: 'mixtool', file: alertFile }));
  for (const [file, d] of files.dashboards) {
    findings.push(...lintDashboardIdentity(file, d).map((f) => ({ ...f, tool: 'mixtool' as const, file })));
    findings.push(...lintDashboard(d).map((f) => ({ ...f, tool: 'dashboard-linter' as const, file })));
  }
  return findings;
}

/** The findings a .lint file leaves (warnings downgraded, exclusions dropped). */
export function remainingFindings(findings: readonly Finding[], config: LintConfig): Finding[] {
  return findings.flatMap((f) => {
    const verdict = applyLintConfig(config, f);
    if (verdict === 'excluded') return [];
    return [verdict === 'warning' ? { ...f, severity: 'warning' as const } : f];
  });
}

function main(): number {
  const all = allFindings(shippedFiles());
  const shown = process.argv.includes('--no-exclusions') ? all : remainingFindings(all, shippedLintConfig());
  const counts = new Map<string, number>();
  for (const f of shown) {
    console.log(`${f.file}: [${f.rule}] ${f.severity}: ${f.message}`);
    const key = `${f.tool} ${f.rule}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  console.log(`\n${shown.length} finding(s)${shown.length === all.length ? '' : ` (${all.length - shown.length} excluded by mixin/.lint)`}`);
  for (const [key, n] of [...counts].sort()) console.log(`  ${n}\t${key}`);
  return shown.length === 0 ? 0 : 1;
}

if (isMain(import.meta.url)) process.exitCode = main();
