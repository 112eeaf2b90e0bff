/** Number formatting and plain tables, shared by the console output and docs/performance.md. */

export interface Table {
  /** Names the table's layout in docs/performance.md (a marker comment); see TABLE_HEADS in tables.ts. */
  readonly id?: string;
  readonly title: string;
  readonly head: readonly string[];
  readonly rows: ReadonlyArray<readonly string[]>;
  /** Columns from this index on are numbers (right-aligned); the ones before are names. */
  readonly numericFrom: number;
}

export function count(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–';
}

/** Milliseconds with precision that suits the magnitude. */
export function ms(n: number): string {
  if (!Number.isFinite(n)) return '–';
  if (n === 0) return '0 ms';
  if (n >= 10_000) return `${(n / 1000).toFixed(1)} s`;
  if (n >= 1000) return `${(n / 1000).toFixed(2)} s`;
  if (n >= 100) return `${n.toFixed(0)} ms`;
  if (n >= 10) return `${n.toFixed(1)} ms`;
  if (n >= 1) return `${n.toFixed(2)} ms`;
  return `${(n * 1000).toFixed(0)} µs`;
}

export function seconds(s: number): string {
  if (!Number.isFinite(s)) return '–';
  if (s >= 120) return `${(s / 60).toFixed(1)} min`;
  return `${s.toFixed(s >= 10 ? 0 : 1)} s`;
}

export function bytes(n: number): string {
  if (!Number.isFinite(n)) return '–';
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

export function percent(share: number): string {
  if (!Number.isFinite(share)) return '–';
  const pct = share * 100;
  return `${pct.toFixed(pct < 10 ? 1 : 0)} %`;
}

function cell(t: Table, row: readonly string[], i: number, width: number): string {
  const v = row[i] ?? '';
  return i >= t.numericFrom ? v.padStart(width) : v.padEnd(width);
}

/** Aligned plain text for the terminal. */
export function textTable(t: Table): string {
  const widths = t.head.map((h, i) => Math.max(h.length, ...t.rows.map((r) => (r[i] ?? '').length)));
  const line = (row: readonly string[]) => row.map((_, i) => cell(t, row, i, widths[i] ?? 0)).join('  ').trimEnd();
  return [t.title, line(t.head), widths.map((w) => '-'.repeat(w)).join('  '), ...t.rows.map(line)].join('\n');
}

/** A GitHub-flavoured Markdown table (the title is left to the caller). */
export function markdownTable(t: Table): string {
  const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const rule = t.head.map((_, i) => (i >= t.numericFrom ? '---:' : '---'));
  return [row(t.head), row(rule), ...t.rows.map(row)].join('\n');
}
