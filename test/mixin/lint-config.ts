/**
 * The `.lint` file of grafana/dashboard-linter (lint/configuration.go), which mixtool reads too
 * (pkg/mixer/lint.go, for its alert rules): per rule name, `exclusions` (a finding is dropped) or
 * `warnings` (an error becomes a warning), each either for every finding of the rule (no entries) or
 * for the findings an entry matches. An entry matches on every field it sets: `dashboard` (title),
 * `panel` (title), `targetIdx` (index of the target in its panel) and, for mixtool, `alert` (name).
 *
 * Differences from the original, all stricter: an unknown key is an error (yaml.v3 silently ignores
 * it; it lowercases field names, so upstream only reads `targetidx`, not the documented `targetIdx`:
 * this reader takes both), and so is a rule or an entry without a `reason`.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export interface LintEntry {
  readonly reason?: string;
  readonly dashboard?: string;
  readonly panel?: string;
  readonly alert?: string;
  readonly targetIdx?: number;
}

export interface LintRuleEntries {
  readonly reason?: string;
  readonly entries: readonly LintEntry[];
}

export interface LintConfig {
  readonly exclusions: ReadonlyMap<string, LintRuleEntries>;
  readonly warnings: ReadonlyMap<string, LintRuleEntries>;
}

/** What a finding is about, for matching against entries. */
export interface FindingContext {
  readonly rule: string;
  readonly dashboard?: string;
  readonly panel?: string;
  readonly targetIdx?: number;
  readonly alert?: string;
}

export const EMPTY_LINT_CONFIG: LintConfig = { exclusions: new Map(), warnings: new Map() };

const ENTRY_KEYS = new Set(['reason', 'dashboard', 'panel', 'alert', 'targetIdx', 'targetidx']);

function ruleEntries(where: string, raw: unknown): LintRuleEntries {
  if (raw === null || raw === undefined) return { entries: [] };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${where}: must be a mapping with reason and entries`);
  const { reason, entries, ...rest } = raw as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw new Error(`${where}: unknown key(s) ${Object.keys(rest).join(', ')}`);
  if (reason !== undefined && typeof reason !== 'string') throw new Error(`${where}.reason: must be a string`);
  if (entries !== undefined && entries !== null && !Array.isArray(entries)) throw new Error(`${where}.entries: must be a list`);
  const list = ((entries ?? []) as unknown[]).map((e, i): LintEntry => {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw new Error(`${where}.entries[${i}]: must be a mapping`);
    const entry = e as Record<string, unknown>;
    for (const key of Object.keys(entry)) if (!ENTRY_KEYS.has(key)) throw new Error(`${where}.entries[${i}]: unknown key ${key}`);
    const idx = entry.targetIdx ?? entry.targetidx;
    return {
      ...(typeof entry.reason === 'string' ? { reason: entry.reason } : {}),
      ...(typeof entry.dashboard === 'string' ? { dashboard: entry.dashboard } : {}),
      ...(typeof entry.panel === 'string' ? { panel: entry.panel } : {}),
      ...(typeof entry.alert === 'string' ? { alert: entry.alert } : {}),
      ...(idx !== undefined ? { targetIdx: Number(idx) } : {}),
    };
  });
  return { ...(reason !== undefined ? { reason } : {}), entries: list };
}

function section(where: string, raw: unknown): Map<string, LintRuleEntries> {
  if (raw === null || raw === undefined) return new Map();
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${where}: must be a mapping of rule names`);
  return new Map(Object.entries(raw as Record<string, unknown>).map(([rule, v]) => [rule, ruleEntries(`${where}.${rule}`, v)]));
}

export function parseLintConfig(text: string, where = '.lint'): LintConfig {
  const raw: unknown = parse(text);
  if (raw === null || raw === undefined) return EMPTY_LINT_CONFIG;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${where}: must be a mapping`);
  const { exclusions, warnings, ...rest } = raw as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw new Error(`${where}: unknown key(s) ${Object.keys(rest).join(', ')}`);
  return { exclusions: section(`${where}: exclusions`, exclusions), warnings: section(`${where}: warnings`, warnings) };
}

export function readLintConfig(path: string): LintConfig {
  return parseLintConfig(readFileSync(path, 'utf8'), path);
}

/** configuration.go IsMatch: every field the entry sets must equal the finding's (when it has one). */
export function entryMatches(e: LintEntry, f: FindingContext): boolean {
  if (e.dashboard !== undefined && f.dashboard !== undefined && e.dashboard !== f.dashboard) return false;
  if (e.panel !== undefined && f.panel !== undefined && e.panel !== f.panel) return false;
  if (e.targetIdx !== undefined && f.targetIdx !== undefined && e.targetIdx !== f.targetIdx) return false;
  // mixtool (isLintExcluded) matches alert rules on the alert name alone.
  if (f.alert !== undefined && e.alert !== f.alert) return false;
  return true;
}

function matches(rules: ReadonlyMap<string, LintRuleEntries>, f: FindingContext): boolean {
  const r = rules.get(f.rule);
  if (r === undefined) return false;
  return r.entries.length === 0 || r.entries.some((e) => entryMatches(e, f));
}

/** configuration.go Apply: `excluded` drops the finding, `warning` downgrades it. */
export function applyLintConfig(config: LintConfig, f: FindingContext): 'excluded' | 'warning' | 'unchanged' {
  if (matches(config.exclusions, f)) return 'excluded';
  if (matches(config.warnings, f)) return 'warning';
  return 'unchanged';
}

/** Rules and entries without a reason: the project asks one of every exception. */
export function missingReasons(config: LintConfig): string[] {
  const problems: string[] = [];
  for (const [kind, rules] of [['exclusions', config.exclusions], ['warnings', config.warnings]] as const) {
    for (const [rule, r] of rules) {
      if (!r.reason?.trim() && r.entries.some((e) => !e.reason?.trim())) problems.push(`${kind}.${rule}: an entry has no reason, nor has the rule`);
      if (!r.reason?.trim() && r.entries.length === 0) problems.push(`${kind}.${rule}: no reason`);
    }
  }
  return problems;
}
