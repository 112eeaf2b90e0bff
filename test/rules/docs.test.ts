/** docs/alerts.md: a runbook section per alert, every threshold documented with its default. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { THRESHOLDS, alertGroups } from '../../scripts/gen-rules.js';
import { DEFAULT_PORT } from '../../src/config/types.js';
import { REPO } from '../dashboards/metrics.js';

const doc = readFileSync(new URL('docs/alerts.md', REPO), 'utf8');
const alerts = alertGroups().flatMap((g) => g.rules);

/** GitHub's heading anchor: lower case, punctuation removed, spaces to hyphens. */
const anchor = (heading: string) => heading.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');

function section(name: string): string {
  const start = doc.indexOf(`\n### ${name}\n`);
  if (start < 0) return '';
  const next = doc.indexOf('\n### ', start + 1);
  return doc.slice(start, next < 0 ? undefined : next);
}

const rows = doc.split('\n').filter((l) => l.startsWith('|'));

describe('docs/alerts.md', () => {
  it.each(alerts.map((a) => [a.alert, a] as const))('%s has a runbook section at its runbook_url anchor', (name, a) => {
    const text = section(name);
    expect(text, `a "### ${name}" heading`).not.toBe('');
    expect(a.annotations.runbook_url.endsWith(`#${anchor(name)}`)).toBe(true);
    for (const part of ['**Meaning.**', '**Likely causes.**', '**What to check.**', '**Fix or silence.**']) {
      expect(text).toContain(part);
    }
  });

  it.each(alerts.map((a) => [a.alert, a] as const))('%s is in the alert table with its severity and for:', (name, a) => {
    const row = rows.find((r) => r.startsWith(`| [${name}](#${anchor(name)}) |`));
    expect(row).toBeDefined();
    expect(row).toContain(`| ${a.labels.severity} | ${a.for} |`);
  });

  it.each(Object.entries(THRESHOLDS).filter(([key]) => key !== 'for'))('threshold %s is documented with its default', (key, value) => {
    const row = rows.find((r) => r.startsWith(`| \`${key}\` |`));
    expect(row).toBeDefined();
    expect(row).toContain(String(value));
  });

  it('explains how to load the rules and scrape the exporter on its default port', () => {
    expect(doc).toContain('rule_files:');
    expect(doc).toContain('cmdb-alerts.yml');
    expect(doc).toContain('cmdb-rules.yml');
    expect(doc).toContain(`targets: ['cmdb-exporter:${DEFAULT_PORT}']`);
  });
});
