import { Registry } from 'prom-client';
import { createInstruments, type Instruments } from '../../../src/metrics/instruments.js';
import { FAMILIES } from '../../../src/metrics/catalogue.js';
import { wholeSelfFamilies } from '../../../src/exposition/self-families.js';
import { TEXT_FORMAT } from '../../../src/exposition/text-format.js';

export interface TestMetrics {
  registry: Registry;
  instruments: Instruments;
  /** The exporter's own metrics as the whole /metrics writes them. */
  text(): Promise<string>;
  /** Value of one series, 0 when absent. For a histogram, its _count. */
  value(name: string, labels: Record<string, string>): Promise<number>;
  /** outcome → count of cmdb_endpoint_requests_total for one endpoint. */
  outcomes(endpoint: string): Promise<Record<string, number>>;
}

export function testMetrics(): TestMetrics {
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  /** Every series of the family, of every stack (each stack's instruments are in a registry of its own). */
  const series = async (name: string) => {
    const family = name.replace(/_count$/, '');
    const metrics = [registry, ...instruments.registries.stacks()].flatMap((r) => r.getSingleMetric(family) ?? []);
    if (metrics.length === 0 && !FAMILIES.has(family)) throw new Error(`no metric ${name}`);
    const values = await Promise.all(metrics.map(async (m) => (await m.get()).values));
    return values.flat() as Array<{ metricName?: string; labels: Record<string, string | number>; value: number }>;
  };
  /** The exporter's own metrics as the whole /metrics writes them. */
  const text = async () => TEXT_FORMAT.write(await wholeSelfFamilies(instruments.registries));
  const matches = (labels: Record<string, string | number>, want: Record<string, string>) =>
    Object.entries(want).every(([k, v]) => String(labels[k]) === v);
  return {
    registry,
    instruments,
    text,
    async value(name, labels) {
      const values = await series(name);
      const hit = values.find(
        (v) => (v.metricName === undefined || v.metricName === name) && matches(v.labels, labels),
      );
      return hit?.value ?? 0;
    },
    async outcomes(endpoint) {
      const out: Record<string, number> = {};
      for (const v of await series('cmdb_endpoint_requests_total')) {
        if (v.labels.endpoint === endpoint) out[String(v.labels.outcome)] = v.value;
      }
      return out;
    },
  };
}
