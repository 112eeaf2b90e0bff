/**
 * Shapes and small helpers shared by the rule definitions. The thresholds themselves live in one
 * table at the top of scripts/gen-rules.ts; every rule builder receives that table as an argument,
 * so a threshold is written exactly once.
 */
import { FAMILIES } from '../../src/metrics/catalogue.js';
import type { MixinConfig } from '../mixin.js';
import { PROBLEM_OF } from './problems.js';
import { joinMatchers } from '../jsonnet/symbolic.js';

// Seconds and ratios as the rules' descriptions write them (and as the jsonnet mixin computes them).
export { humanSeconds, percentBelow, percentOf } from '../jsonnet/symbolic.js';

export type Severity = 'critical' | 'warning' | 'info';

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for: string;
  /** How long a cause keeps firing after its condition cleared (Prometheus 2.42+). */
  readonly keep_firing_for?: string;
  /** `problem`: what broke (scripts/rules/problems.ts), what Alertmanager groups by. */
  readonly labels: { readonly severity: Severity; readonly problem: string };
  readonly annotations: {
    readonly summary: string;
    readonly description: string;
    readonly runbook_url: string;
  };
}

export interface RecordingRule {
  readonly record: string;
  readonly expr: string;
}

export interface RuleGroup<R> {
  readonly name: string;
  readonly interval?: string;
  readonly rules: readonly R[];
}

/* Durations are Prometheus duration strings. */
/**
 * Every tunable value of the rules, besides the mixin settings (scripts/mixin.ts: the job and stack
 * selectors, the runbook base URL, and Grafana's URL, which only the Alertmanager templates use).
 */
export interface Thresholds extends MixinConfig {
  /** An endpoint's data is stale after this many poll intervals without a successful poll. */
  readonly endpointStaleIntervals: number;
  readonly licenseWarningDays: number;
  readonly licenseCriticalDays: number;
  readonly connectorMaxRunAgeSeconds: number;
  /** The asset or user merger has not written a run for this long. */
  readonly mergerMaxRunAgeSeconds: number;
  readonly ingestionMaxRunSeconds: number;
  readonly ingestionMaxSuccessAgeSeconds: number;
  readonly ingestionNextRunGraceSeconds: number;
  readonly actionNextRunGraceSeconds: number;
  /** Regex of newest-job statuses that are not a failure. */
  readonly actionJobOkStatuses: string;
  /** Alert when the count falls below this fraction of its 30-day average. */
  readonly inventoryDropRatio: number;
  /** Alert when the request rate exceeds this fraction of the configured budget. */
  readonly rateBudgetRatio: number;
  /** Window over which rate-limit responses, token rejections and series drops are counted. */
  readonly counterWindow: string;
  /** CmdbUnreachable: every request of the stack in this window failed to connect or timed out. */
  readonly unreachableWindow: string;
  /** CmdbUnreachable keeps firing this long after the CMDB answers again: its endpoints' retries. */
  readonly unreachableKeepFiringFor: string;
  /** `for:` of each alert, by alert name. */
  readonly for: Readonly<Record<string, string>>;
}

/**
 * A selector of `metric` limited to the exporter's job and, for series with a `stack` label (every
 * CMDB family and every recording rule), to the selected stacks; plus optional extra matchers.
 */
export function selector(t: Thresholds, metric: string, extra = ''): string {
  const family = FAMILIES.get(metric);
  const hasStack = metric !== 'up' && (family === undefined || family.labels.includes('stack'));
  return `${metric}{${joinMatchers([t.jobSelector, hasStack ? t.stackSelector : '', extra])}}`;
}

/**
 * How much the counter `metric{extra}` rose in the last `window`, in whole events: its value now
 * minus its value `window` ago, each the newest scrape at or before that instant (the same sample on
 * Prometheus 2 and 3). Where there is no value `window` ago (a new series, or a target back after a
 * gap) or it is higher than now (the exporter restarted), what it rose since its lowest sample in the
 * window: a count that can be short, never high.
 *
 * Not `increase(x[window])`: a range selector is closed on Prometheus 2 and left-open on 3, so a
 * sample on the window's left edge (every sample in promtool's tests, and any scrape that falls there)
 * is counted by one and not by the other, and increase() extrapolates what it sees to the window:
 * 1.5 requests where the scrapes counted 2, and an alert a scrape early on one of them. Here a sample
 * on the edge is the value `window` ago, which both pick; min_over_time() counts only where no sample
 * lies on the edge, or where the one there is above every sample of the restarted process, so that it
 * is never the minimum.
 */
export function counted(t: Thresholds, metric: string, extra: string, window: string): string {
  const s = selector(t, metric, extra);
  return `${s} - ${s} offset ${window} >= 0\nor\n${s} - min_over_time(${s}[${window}])`;
}

/** Every line of `text` indented by two spaces. */
const indent = (text: string): string => text.replace(/^/gm, '  ');

/** `expr` in parentheses on lines of its own, after `aggregation` (e.g. `sum without (outcome)`) if any. */
export function enclose(expr: string, aggregation = ''): string {
  return `${aggregation === '' ? '' : `${aggregation} `}(\n${indent(expr)}\n)`;
}

/** `(profile x)` after a connector name, or nothing for the internal merger rows without a profile. */
export const PROFILE = '{{ with $labels.profile }} (profile {{ . }}){{ end }}';
export const CONNECTOR = `connector {{ $labels.connector }}${PROFILE}`;
export const STACK = 'stack {{ $labels.stack }}';
/** Action name when the join with cmdb_action_info found it, else the id alone. */
export const ACTION =
  'Action {{ $labels.action_id }}{{ with $labels.action_name }} ({{ . }}){{ end }}';

export function alertFactory(t: Thresholds) {
  return function alert(
    name: string,
    severity: Severity,
    expr: string,
    /** One static sentence naming the problem (mixtool's guideline); every specific goes in `description`. */
    summary: string,
    description: string,
    /** For an alert whose `for:` is itself a threshold rather than an entry of `t.for`. */
    forOverride?: string,
    /** keep_firing_for: of a cause, which must outlast its effects. */
    keepFiringFor?: string,
  ): AlertRule {
    const forDuration = forOverride ?? t.for[name];
    if (forDuration === undefined) throw new Error(`thresholds.for has no entry for ${name}`);
    if (summary.includes('{{') || !/^[A-Z].+\.$/.test(summary)) throw new Error(`${name}: the summary must be one static sentence ending with a period, got ${JSON.stringify(summary)}`);
    if (!description.includes('{{')) throw new Error(`${name}: the description must name the alert's object from its labels`);
    const problem = PROBLEM_OF[name];
    if (problem === undefined) throw new Error(`PROBLEM_OF (scripts/rules/problems.ts) has no entry for ${name}`);
    return {
      alert: name,
      expr,
      for: forDuration,
      ...(keepFiringFor === undefined ? {} : { keep_firing_for: keepFiringFor }),
      labels: { severity, problem },
      annotations: {
        summary,
        description,
        runbook_url: `${t.runbookBaseUrl}#${name.toLowerCase()}`,
      },
    };
  };
}

/**
 * Adds `action_name` from cmdb_action_info when that series exists; keeps the alert without the
 * name when it does not (a failing actions poll must not hide a failed job).
 */
export function withActionName(t: Thresholds, expr: string): string {
  const key = 'job, instance, stack, action_id';
  return [
    `(${expr})`,
    `  * on (${key}) group_left (action_name) ${selector(t, 'cmdb_action_info')}`,
    `or on (${key})`,
    `  ${expr}`,
  ].join('\n');
}
