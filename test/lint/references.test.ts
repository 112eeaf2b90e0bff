/**
 * What the repository's text refers to must be there for a reader of the public repository:
 * no citation of documents outside it (a sibling `shared` directory, "spec note 4", "real-service
 * notes §4.2"), every alert name the docs mention is a shipped alert, and the design document
 * describes the sharding the exporter has.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { alertGroups } from '../../scripts/gen-rules.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SELF = relative(ROOT, fileURLToPath(import.meta.url));
const TEXT = /\.(ts|js|mjs|cjs|md|ya?ml|json|sh)$|^Dockerfile$/;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'fixtures') out.push(...files(path));
    } else if (TEXT.test(entry.name)) out.push(path);
  }
  return out;
}

const SCANNED = [
  ...['src', 'docs', 'scripts', 'bench', 'test', 'config', 'deploy', 'grafana'].flatMap(files),
  'README.md',
  'CONTRIBUTING.md',
  'Dockerfile',
].filter((f) => f !== SELF);

/** Citations of documents that are not in the repository. */
const OUTSIDE = [
  /\.\.\/shared\b/,
  /\bspec notes?\b/i,
  /\bspec §/i,
  /\breal[- ]service notes\b/i,
  /\breal[- ]service §/i,
  /\bcmdb-api(-real-service)?\.md\b/,
  /\bdesign\/(architecture|metrics|conventions|performance)\.md\b/,
];

function citations(): string[] {
  const found: string[] = [];
  for (const file of SCANNED) {
    readFileSync(join(ROOT, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (OUTSIDE.some((re) => re.test(line))) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
  }
  return found;
}

describe('references a reader of the repository can follow', () => {
  it('cites no document outside the repository (say what it says, or see docs/cmdb-api-notes.md)', () => {
    expect(citations()).toEqual([]);
  });

  it('scans the source, the docs and the tests', () => {
    for (const f of ['src/api/endpoints.ts', 'docs/design.md', 'test/cmdb/client-paths.test.ts', 'README.md']) expect(SCANNED).toContain(f);
  });

  it('names only shipped alerts in the documentation', () => {
    const alerts = new Set(alertGroups().flatMap((g) => g.rules.map((r) => r.alert)));
    // Identifiers of the code (CmdbClient, CmdbHttpError) are not alerts.
    const declared = new Set(files('src').flatMap((f) => [...readFileSync(join(ROOT, f), 'utf8').matchAll(/\b(?:class|interface|type|function)\s+(Cmdb\w+)/g)].map((m) => m[1])));
    const docs = ['README.md', 'CONTRIBUTING.md', ...files('docs'), ...files('deploy').filter((f) => f.endsWith('.md'))];
    const unknown = docs.flatMap((f) =>
      [...readFileSync(join(ROOT, f), 'utf8').matchAll(/\bCmdb[A-Z]\w+/g)].map((m) => m[0]).filter((n) => !alerts.has(n) && !declared.has(n)).map((n) => `${f}: ${n}`),
    );
    expect(unknown).toEqual([]);
  });

  it('docs/design.md describes the sharding the exporter has, not "no clustering on purpose"', () => {
    const design = readFileSync(join(ROOT, 'docs/design.md'), 'utf8').replace(/\s+/g, ' ');
    expect(design.includes('no clustering of its own on purpose'), 'design.md says there is no clustering').toBe(false);
    expect(design.includes('--total-shards'), 'design.md names --total-shards').toBe(true);
  });
});
