/**
 * How a series is written in Prometheus's text formats (0.0.4, and OpenMetrics 1.0.0, which writes
 * a label set and a value the same way): its label set, which is also its identity (the store
 * de-duplicates by it), and its value. The exposition's writers (src/exposition/) and the backfill's
 * OpenMetrics writer build on these.
 */
import type { Labels } from './sample.js';

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
