/**
 * What every cell does with its figures: prints them as Markdown tables (ready to paste into
 * docs/performance.md, which is written by hand) and saves them as JSON, with the machine they were
 * measured on, into bench/results/ (outside git) or the file --json names.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';

export interface Table {
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

/** The table on stdout as GitHub-flavoured Markdown, its title first, as docs/performance.md shows tables. */
export function printTable(t: Table): void {
  const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const rule = t.head.map((_, i) => (i >= t.numericFrom ? '---:' : '---'));
  console.log(`${t.title}:\n\n${[row(t.head), row(rule), ...t.rows.map(row)].join('\n')}\n`);
}

export function machine() {
  const cores = cpus();
  return {
    cpus: cores.length,
    cpuModel: cores[0]?.model.trim() ?? 'unknown',
    memoryBytes: totalmem(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString().slice(0, 10),
  };
}

export function machineLine(): string {
  const m = machine();
  return `Machine: ${m.cpus} × ${m.cpuModel}, ${(m.memoryBytes / 2 ** 30).toFixed(1)} GiB RAM, Node.js ${m.node} (${m.platform}), ${m.date}`;
}

const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));

/** Saves a cell's figures with the machine as JSON to `file` (--json) or bench/results/<cell>-<time>.json (ignored by git); says where on stderr. */
export function saveFigures(cell: string, figures: object, file?: string): void {
  const path = file ?? `${RESULTS}${cell}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  if (!file) mkdirSync(RESULTS, { recursive: true });
  writeFileSync(path, `${JSON.stringify({ machine: machine(), ...figures }, null, 2)}\n`);
  console.error(`bench: figures saved to ${path}`);
}
