/**
 * The writer of OpenMetrics 1.0.0 (application/openmetrics-text): the same samples, with the same
 * names, labels and values, as the text format 0.0.4 (text-format.ts). What differs is in the
 * metadata (docs/formats.md, "What differs between the formats"): counter families named without
 * `_total` (one whose name does not end in it is `unknown`), `…_info` gauges of value 1 as `info`,
 * `# UNIT`, `"` escaped in HELP, `# EOF` last; `_created` lines only with --web.openmetrics-created.
 */
import { formatValue } from '../metrics/series-text.js';
import type { Family, FamilyMeta, FamilySeries, Format } from './family.js';
import { labelText } from './text-format.js';

export const EOF = '# EOF\n';

const UNITS = ['seconds', 'bytes', 'ratio'];

/** HELP text of OpenMetrics: backslash, line feed and double quote escaped. */
export function escapeOpenMetricsHelp(text: string): string {
  return text.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** How a family is declared in OpenMetrics: its name there, its type, its unit (if any). */
export type OpenMetricsMeta = Pick<FamilyMeta, 'name' | 'type'> & { readonly unit?: string };

/** `values` says whether every value is 1 (an info family), when known; the catalogue's `_info` gauges are by design. */
export function openMetricsMeta(f: FamilyMeta, allOnes = true): OpenMetricsMeta {
  if (f.type === 'counter') return f.name.endsWith('_total') ? withUnit(f.name.slice(0, -'_total'.length), 'counter') : { name: f.name, type: 'unknown' };
  if (f.type === 'gauge' && f.name.endsWith('_info') && allOnes) return { name: f.name.slice(0, -'_info'.length), type: 'info' };
  if (f.type === 'untyped') return { name: f.name, type: 'unknown' };
  return withUnit(f.name, f.type);
}

function withUnit(name: string, type: string): OpenMetricsMeta {
  const unit = UNITS.find((u) => name.endsWith(`_${u}`));
  return unit ? { name, type, unit } : { name, type };
}

function headerOf(f: FamilyMeta, allOnes?: boolean): string {
  const m = openMetricsMeta(f, allOnes);
  const unit = m.unit ? `# UNIT ${m.name} ${m.unit}\n` : '';
  return `# HELP ${m.name} ${escapeOpenMetricsHelp(f.help)}\n# TYPE ${m.name} ${m.type}\n${unit}`;
}

/** The labels of a histogram's or summary's series without `le`/`quantile`: the key of its start time. */
function withoutBucket(labels: FamilySeries['labels']): FamilySeries['labels'] {
  if (!('le' in labels) && !('quantile' in labels)) return labels;
  const { le: _le, quantile: _q, ...rest } = labels;
  return rest;
}

export interface OpenMetricsOptions {
  /** Write `_created` lines for the series that carry a start (FamilySeries.created). */
  readonly created?: boolean;
}

/** One family in OpenMetrics; empty when it has no series. */
export function writeOpenMetricsFamily({ family, series }: Family, opts: OpenMetricsOptions = {}): string {
  if (series.length === 0) return '';
  const meta = openMetricsMeta(family, series.every((s) => s.value === 1));
  let text = headerOf(family, meta.type === 'info');
  const created = opts.created === true && (meta.type === 'counter' || meta.type === 'histogram' || meta.type === 'summary');
  let lastGroup: string | undefined;
  let lastCreated: number | undefined;
  const flush = () => {
    if (lastGroup !== undefined && lastCreated !== undefined) text += `${meta.name}_created${lastGroup} ${formatValue(lastCreated)}\n`;
  };
  for (const s of series) {
    if (created) {
      const group = labelText(family, withoutBucket(s.labels));
      if (group !== lastGroup) {
        flush();
        lastGroup = group;
        lastCreated = s.created;
      }
    }
    text += `${s.name ?? family.name}${labelText(family, s.labels)} ${formatValue(s.value)}\n`;
  }
  if (created) flush();
  return text;
}

export function openMetricsFormat(opts: OpenMetricsOptions = {}): Format {
  return {
    header: (f) => headerOf(f),
    write: (families) => families.map((f) => writeOpenMetricsFamily(f, opts)).join(''),
    trailer: EOF,
  };
}
