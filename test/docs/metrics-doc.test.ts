import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderMetricsDoc } from '../../scripts/gen-metrics-doc.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';

describe('docs/metrics.md', () => {
  it('is up to date with the catalogue (run `npm run docs:metrics` after changing a metric)', () => {
    const onDisk = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
    expect(onDisk).toBe(renderMetricsDoc());
  });

  it('documents every family of the catalogue', () => {
    const doc = renderMetricsDoc();
    for (const f of CATALOGUE) expect(doc).toContain(`\`${f.name}\``);
  });
});
