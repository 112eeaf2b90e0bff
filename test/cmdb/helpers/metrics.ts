import { Registry } from 'prom-client';
import { createInstruments, type Instruments } from '../../../src/metrics/instruments.js';

export interface TestMetrics {
  registry: Registry;
  instruments: Instruments;
  /** Value of one series, 0 when absent. For a histogram, its _count. */
  value(name: string, labels: Record<string, string>): Promise<number>;
  /** outcome → count of cmdb_endpoint_requests_total for one endpoint. */
  outcomes(endpoint: string): Promise<Record<string, number>>;
}

export function testMetrics(): TestMetrics {
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const series = async (name: string) => {
    const metric = registry.getSingleMetric(name.replace(/_count$/, ''));
    if (!metric) throw new Error(`no metric ${name}`);
    return (await metric.get()).values as Array<{ metricName?: string; labels: Record<string, string | number>; value: number }>;
  };
  const matches = (labels: Record<string, string | number>, want: Record<string, string>) =>
    Object.entries(want).every(([k, v]) => String(labels[k]) === v);
  return {
    registry,
    instruments,
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
