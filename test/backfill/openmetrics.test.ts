import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenMetricsWriter } from '../../src/backfill/openmetrics.js';
import { escapeOpenMetricsHelp } from '../../src/exposition/openmetrics-format.js';
import type { MetricFamily } from '../../src/metrics/catalogue.js';

const fam = (name: string, help = `help of ${name}`): MetricFamily => ({ name, type: 'gauge', labels: ['stack'], help, origin: 'snapshot' });

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('OpenMetrics writer', () => {
  it("puts each family's lines together in family order, each in the order added, and ends with # EOF", () => {
    dir = mkdtempSync(join(tmpdir(), 'om-test-'));
    const w = new OpenMetricsWriter([fam('a_metric'), fam('b_metric'), fam('c_metric')], dir);
    // Steps interleave the families, as the replay does.
    for (const t of [100, 200, 300]) {
      w.add(1, `b_metric{stack="s"} ${t / 100}`, t);
      w.add(0, `a_metric{stack="s",x="1"} 1`, t);
      w.add(0, `a_metric{stack="s",x="2"} 2`, t);
    }
    expect(w.total).toBe(9);
    const path = join(dir, 'out.om');
    const bytes = w.finish(path);
    const text = readFileSync(path, 'utf8');
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(text).toBe(
      [
        '# HELP a_metric help of a_metric',
        '# TYPE a_metric gauge',
        'a_metric{stack="s",x="1"} 1 100',
        'a_metric{stack="s",x="2"} 2 100',
        'a_metric{stack="s",x="1"} 1 200',
        'a_metric{stack="s",x="2"} 2 200',
        'a_metric{stack="s",x="1"} 1 300',
        'a_metric{stack="s",x="2"} 2 300',
        '# HELP b_metric help of b_metric',
        '# TYPE b_metric gauge',
        'b_metric{stack="s"} 1 100',
        'b_metric{stack="s"} 2 200',
        'b_metric{stack="s"} 3 300',
        '# EOF',
        '',
      ].join('\n'),
    );
    // A family without samples has no header; the per-family files are gone.
    expect(text).not.toContain('c_metric');
    expect(readdirSync(dir)).toEqual(['out.om']);
  });

  it('keeps the order across flushes of a large family (its lines go through a file)', () => {
    dir = mkdtempSync(join(tmpdir(), 'om-test-'));
    const w = new OpenMetricsWriter([fam('big'), fam('small')], dir);
    const n = 20_000;
    for (let t = 1; t <= n; t++) {
      w.add(0, `big{stack="s",pad="${'x'.repeat(40)}"} ${t}`, t);
      if (t % 1000 === 0) w.add(1, `small{stack="s"} ${t}`, t);
    }
    const path = join(dir, 'out.om');
    w.finish(path);
    const lines = readFileSync(path, 'utf8').split('\n');
    const big = lines.filter((l) => l.startsWith('big{')).map((l) => Number(l.split(' ').at(-1)));
    expect(big).toHaveLength(n);
    expect(big.every((t, i) => t === i + 1)).toBe(true);
    const firstSmall = lines.findIndex((l) => l.startsWith('small{'));
    const lastBig = lines.findLastIndex((l) => l.startsWith('big{'));
    expect(firstSmall).toBeGreaterThan(lastBig);
    expect(lines.at(-2)).toBe('# EOF');
  });

  it('discard removes its files without writing anything', () => {
    dir = mkdtempSync(join(tmpdir(), 'om-test-'));
    const w = new OpenMetricsWriter([fam('a')], dir);
    for (let t = 0; t < 50_000; t++) w.add(0, `a{stack="s",i="${t}"} 1`, t);
    w.discard();
    expect(readdirSync(dir)).toEqual([]);
  });

  it('escapes HELP as OpenMetrics wants', () => {
    expect(escapeOpenMetricsHelp('a "b" \\ c\nd')).toBe('a \\"b\\" \\\\ c\\nd');
  });
});
