/**
 * The writer of the Prometheus text exposition format 0.0.4: families as the store's catalogue
 * families and the exporter's own instruments give them (family.ts), without a registry, so that
 * the exposition is assembled from pieces made once per change. The series lines of the store's
 * endpoints are this format's too (text-lines.ts).
 */
import { escapeHelp, escapeLabelValue, formatLabels, formatValue } from '../metrics/series-text.js';
import type { Family, FamilyMeta, FamilySeries, Format } from './family.js';

export function header(f: FamilyMeta): string {
  return `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n`;
}

/** A series' label text: in the family's label order when it has one, else in the order of its labels. */
export function labelText(f: FamilyMeta, labels: FamilySeries['labels']): string {
  if (f.labels) return formatLabels(f.labels, labels as Readonly<Record<string, string>>);
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabelValue(String(value))}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

/** One family: HELP, TYPE, then its series in the order given. Empty string when there are none. */
export function writeFamily({ family, series }: Family): string {
  if (series.length === 0) return '';
  let text = header(family);
  for (const s of series) text += `${s.name ?? family.name}${labelText(family, s.labels)} ${formatValue(s.value)}\n`;
  return text;
}

/** A format whose bytes are text. */
export interface TextFormat extends Format {
  write(families: readonly Family[]): string;
}

export const TEXT_FORMAT: TextFormat = {
  header,
  write: (families) => families.map(writeFamily).join(''),
};
