/**
 * The exporter's own metrics as families of the exposition, read from prom-client's registries
 * through their documented JSON (Registry.getMetricsAsJSON) and written by the exposition's own
 * writer: every stack's instruments live in a registry of that stack (src/metrics/instruments.ts),
 * so a stack's target renders its registry as it is, and the whole /metrics gathers each family's
 * series from every stack's registry into one family.
 */
import type { Registry } from 'prom-client';
import { FAMILIES } from '../metrics/catalogue.js';
import type { SelfRegistries } from '../metrics/instruments.js';
import type { Family, FamilySeries } from './family.js';

/** A label set as prom-client gives it: no label is undefined in what it renders. */
type Labels = FamilySeries['labels'];

type RegistryJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** prom-client's families as the exposition's; prom-client's label order is kept (the order each series was first counted with). */
function familiesOf(json: RegistryJson): Family[] {
  return json.map((m) => ({
    // `type` is the text name at run time ('counter'); prom-client's typings call it an enum.
    family: { name: m.name, help: m.help, type: String(m.type) },
    series: m.values.map((v) => ({ ...('metricName' in v && typeof v.metricName === 'string' ? { name: v.metricName } : {}), labels: v.labels as Labels, value: v.value })),
  }));
}

/** One registry's families, in the order they were registered. */
export async function registryFamilies(registry: Registry): Promise<Family[]> {
  return familiesOf(await registry.getMetricsAsJSON());
}

/**
 * The exporter's own families of the whole /metrics: prom-client's process and Node.js metrics,
 * then each per-stack family with the series of every stack (in the order the stacks were first
 * seen), then the exporter's families without a `stack` label.
 */
export async function wholeSelfFamilies(registries: SelfRegistries): Promise<Family[]> {
  const [own, ...stacks] = await Promise.all([registries.exporter, ...registries.stacks()].map((r) => r.getMetricsAsJSON()));
  const merged = new Map<string, RegistryJson[number]>();
  for (const metric of stacks.flat()) {
    const held = merged.get(metric.name);
    if (held) held.values.push(...metric.values);
    else merged.set(metric.name, { ...metric, values: [...metric.values] });
  }
  const exporter = own ?? [];
  const isDefault = (m: RegistryJson[number]) => !FAMILIES.has(m.name);
  return familiesOf([...exporter.filter(isDefault), ...merged.values(), ...exporter.filter((m) => !isDefault(m))]);
}
