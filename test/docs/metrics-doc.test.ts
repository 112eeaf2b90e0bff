import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderMetricsDoc } from '../../scripts/gen-metrics-doc.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';

describe('docs/metrics.md', () => {
  it('is up to date with the catalogue (run `npm run docs:metrics` after changing a metric)', () => {
    const onDisk = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
    expect(onDisk).toBe(renderMetricsDoc());
  });

  // The generator sorts families into sections by matchers of its own: a family no section matches
  // (or two match) would be missing from the tables (or listed twice), whatever the catalogue says.
  it('has one table row for every family of the catalogue, and no other', () => {
    const rows = [...renderMetricsDoc().matchAll(/^\| `([a-z_:][a-z0-9_:]*)` \|/gm)].map((m) => m[1]);
    expect([...rows].sort()).toEqual(CATALOGUE.map((f) => f.name).sort());
  });
});
