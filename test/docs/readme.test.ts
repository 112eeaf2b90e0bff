/**
 * The reference tables of docs/configuration.md say what the code reads, both ways: every
 * command-line flag the parser accepts is in the flag table and every flag there is accepted; every
 * environment variable the configuration reads is in the environment table and nothing else is.
 * The README is the path in: at most 400 lines, in a newcomer's order, and it links the docs/ pages
 * the facts moved to.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KNOWN_VARS } from '../../src/config/env.js';
import { FLAGS, type FlagSpec } from '../../src/config/flags.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');
const README = read('README.md');
const CONFIGURATION = read('docs/configuration.md');

/** The first cells of the markdown table whose header row starts with `| <first> |`. */
export function firstColumn(markdown: string, first: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`| ${first} |`));
  if (start < 0) throw new Error(`no table with the header "${first}"`);
  const cells: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    cells.push(line.split(/(?<!\\)\|/)[1]?.trim() ?? '');
  }
  return cells;
}

/** Long and short names of every flag the daemon takes (its aliases too), from the flag table. */
function codeFlags(): string[] {
  const flags: string[] = [];
  for (const [name, spec] of Object.entries(FLAGS) as Array<[string, FlagSpec]>) {
    if (!spec.commands.includes('daemon')) continue;
    flags.push(`--${name}`);
    if (spec.short) flags.push(`-${spec.short}`);
  }
  return flags.sort();
}

describe('docs/configuration.md reference tables', () => {
  it('the flag table lists exactly the flags the command line accepts', () => {
    const inTable = firstColumn(CONFIGURATION, 'flag').flatMap((cell) => [...cell.matchAll(/(?<![\w-])(--?[a-z][a-z.-]*)/g)].map((m) => m[1] ?? ''));
    const code = codeFlags();
    expect(code.length).toBeGreaterThan(15);
    expect([...new Set(inTable)].sort()).toEqual(code);
  });

  it('the environment table lists exactly the variables the configuration reads', () => {
    const inTable = firstColumn(CONFIGURATION, 'variable').flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] ?? ''));
    expect([...new Set(inTable)].sort()).toEqual([...KNOWN_VARS].sort());
  });

  it('the table parser reads a table it is given (so the checks above can fail)', () => {
    expect(firstColumn('| flag | meaning |\n|---|---|\n| `--a` | x \\| y |\n| `--b` | z |\n\nafter', 'flag')).toEqual(['`--a`', '`--b`']);
  });
});

describe('README', () => {
  it('is at most 400 lines: the path in, the reference in docs/', () => {
    expect(README.endsWith('\n')).toBe(true);
    expect(README.split('\n').length - 1).toBeLessThanOrEqual(400);
  });

  it('links every docs/ page it moved text to, and each exists', () => {
    for (const page of ['status-page', 'monitoring', 'deployment', 'troubleshooting', 'development', 'configuration', 'alerts', 'metrics', 'scaling', 'security', 'kubernetes']) {
      expect(README).toContain(`](docs/${page}.md`);
      expect(existsSync(`${ROOT}docs/${page}.md`), `docs/${page}.md`).toBe(true);
    }
  });

  it('is in the order a newcomer needs it', () => {
    const headings = [...README.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(headings).toEqual([
      'Requirements',
      'Quick start',
      'Connect your CMDB',
      'Prometheus, alerts and dashboards',
      'Deploy',
      'Configuration',
      'Troubleshooting',
      'More documentation',
      'Development',
      'License',
    ]);
  });
});
