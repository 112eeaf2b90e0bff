/**
 * The metric names a query may use: what the exporter serves (catalogue families, histogram
 * series, prom-client's default metrics), the recording rules in config/prometheus, and the
 * series Prometheus makes itself.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { Registry } from 'prom-client';
import { createInstruments } from '../../src/metrics/instruments.js';
import { parse } from 'yaml';
import { CATALOGUE } from '../../src/metrics/catalogue.js';

export interface MetricInfo {
  /** Labels the series carry besides job and instance; undefined when they vary (rules, ALERTS). */
  readonly labels: ReadonlySet<string> | undefined;
  readonly hasStack: boolean;
  readonly source: 'exporter' | 'default' | 'recording' | 'prometheus';
}

export const REPO = new URL('../../', import.meta.url);
export const RULES_DIR = new URL('config/prometheus/', REPO);

const HISTOGRAM_SERIES = ['_bucket', '_sum', '_count'];

function seriesNames(name: string, type: string): string[] {
  return type === 'histogram' ? HISTOGRAM_SERIES.map((suffix) => `${name}${suffix}`) : [name];
}

interface RuleFile {
  groups?: Array<{ rules?: Array<{ record?: string; alert?: string; expr?: string }> }>;
}

export function ruleFiles(): Map<string, RuleFile> {
  const files = new Map<string, RuleFile>();
  for (const name of readdirSync(RULES_DIR)) {
    if (!/^cmdb-.*\.ya?ml$/.test(name)) continue;
    files.set(name, parse(readFileSync(new URL(name, RULES_DIR), 'utf8')) as RuleFile);
  }
  return files;
}

export function recordedNames(): string[] {
  return [...ruleFiles().values()].flatMap((f) =>
    (f.groups ?? []).flatMap((g) => (g.rules ?? []).flatMap((r) => (r.record ? [r.record] : []))),
  );
}

export async function knownMetrics(): Promise<Map<string, MetricInfo>> {
  const known = new Map<string, MetricInfo>();
  for (const f of CATALOGUE) {
    const labels = new Set(f.labels);
    for (const name of seriesNames(f.name, f.type)) {
      const withLe = f.type === 'histogram' && name.endsWith('_bucket') ? new Set([...labels, 'le']) : labels;
      known.set(name, { labels: withLe, hasStack: labels.has('stack'), source: 'exporter' });
    }
  }
  // The default metrics exactly as the exporter serves them (createInstruments drops a few).
  const registry = new Registry();
  createInstruments(registry);
  for (const metric of await registry.getMetricsAsJSON()) {
    if (metric.name.startsWith('cmdb_')) continue;
    const labels = new Set(metric.values.flatMap((v) => Object.keys(v.labels)));
    for (const name of seriesNames(metric.name, String(metric.type))) {
      known.set(name, { labels, hasStack: false, source: 'default' });
    }
  }
  // Every recording rule in config/prometheus keeps the stack label (the rule tests assert it).
  for (const name of recordedNames()) known.set(name, { labels: undefined, hasStack: true, source: 'recording' });
  for (const name of ['up', 'ALERTS', 'ALERTS_FOR_STATE']) {
    known.set(name, { labels: undefined, hasStack: false, source: 'prometheus' });
  }
  return known;
}
