/**
 * Prometheus text exposition format 0.0.4, for the families the snapshot store renders. prom-client
 * renders its own instruments; this renders CMDB-derived families without a registry so that a
 * complete snapshot can be swapped and rendered in one synchronous step.
 */
import type { MetricFamily } from '../metrics/catalogue.js';
import type { Labels } from '../metrics/sample.js';

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Label values: backslash, double quote and line feed are escaped (exposition format spec). */
export function escapeLabelValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** HELP text: backslash and line feed are escaped. */
export function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/** `{a="x",b="y"}` with labels in the family's order; labels outside the family follow, sorted. */
export function formatLabels(order: readonly string[], labels: Labels): string {
  const names = order.filter((n) => n in labels);
  for (const n of Object.keys(labels).sort()) if (!order.includes(n)) names.push(n);
  if (names.length === 0) return '';
  return `{${names.map((n) => `${n}="${escapeLabelValue(labels[n] ?? '')}"`).join(',')}}`;
}

export interface Series {
  readonly labels: Labels;
  readonly value: number;
}

/** One family: HELP, TYPE, then its series in the order given. Empty string when there are none. */
export function renderFamily(family: MetricFamily, series: readonly Series[]): string {
  if (series.length === 0) return '';
  const lines = [`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`];
  for (const s of series) lines.push(`${family.name}${formatLabels(family.labels, s.labels)} ${formatValue(s.value)}`);
  return `${lines.join('\n')}\n`;
}
