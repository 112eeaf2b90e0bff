/**
 * `npm run bench:prom-client`: what serving the CMDB's series through prom-client would cost. A
 * prom-client Registry holds N gauge series shaped like the exporter's connector families (the
 * catalogue's names and labels: stack, connector, profile, and status/health/kind/level where the
 * family has them, a state set's every state), and each `registry.metrics()` is timed: the
 * render a scrape would wait for, and the longest block of the event loop meanwhile (a 1 ms timer
 * chain). The exporter renders these series once per change instead (docs/design.md "Serving
 * /metrics"). Every loop is bounded by count.
 */
import { parseArgs } from 'node:util';
import { Gauge, Registry } from 'prom-client';
import { CATALOGUE } from '../src/metrics/catalogue.js';
import { saveFigures } from './format.js';
import { loopDelay } from './loop-delay.js';
import { distribution } from './stats.js';

const USAGE = `Usage: npm run bench:prom-client -- [options]

  --series LIST   comma-separated series counts (default 20000,180000: the default maxSeries, and
                  the large size of npm run bench)
  --repeats N     renders timed per count, after one untimed (default 5)
  --json FILE     save the figures to FILE (default: bench/results/prom-client-<time>.json)
  -h, --help      show this help`;

/** Values of the labels beyond stack, connector and profile: a state set gets a series per state. */
const EXTRA: Record<string, readonly string[]> = {
  status: ['ok', 'running', 'failed', 'disabled'],
  health: ['healthy', 'warning', 'critical'],
  kind: ['mapped', 'unmapped'],
  level: ['info', 'warning', 'error'],
  display_name: ['Connector'],
  platform: ['Cloud'],
  version: ['1.4.2'],
};

const FAMILIES = CATALOGUE.filter((f) => f.origin === 'snapshot' && f.labels[1] === 'connector' && f.labels[2] === 'profile');

/** The label sets of one family for one connector profile: every combination of its extra labels' values. */
function labelSets(labels: readonly string[], base: Record<string, string>): Array<Record<string, string>> {
  let sets = [base];
  for (const name of labels.slice(3)) sets = sets.flatMap((s) => (EXTRA[name] ?? ['x']).map((v) => ({ ...s, [name]: v })));
  return sets;
}

/** A registry with `count` series, profile after profile, over the connector families. */
function registryOf(count: number): Registry {
  const registry = new Registry();
  const gauges = FAMILIES.map((f) => ({ f, gauge: new Gauge({ name: f.name, help: f.help, labelNames: [...f.labels], registers: [registry] }) }));
  let made = 0;
  for (let p = 0; made < count; p++) {
    const base = { stack: 'production', connector: `connector-${Math.floor(p / 2)}-${(p * 7919) % 100_003}`, profile: `profile-${p % 2}` };
    for (const { f, gauge } of gauges) {
      for (const labels of labelSets(f.labels, base)) {
        if (made++ >= count) break;
        gauge.set(labels, f.stateSet ? Number(labels.status === 'ok' || labels.health === 'healthy') : 1_700_000_000 + p * 61.5);
      }
    }
  }
  return registry;
}

async function measure(count: number, repeats: number) {
  const registry = registryOf(count);
  const bytes = Buffer.byteLength(await registry.metrics());
  const renders: number[] = [];
  const blocks: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const lag = loopDelay();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const t0 = performance.now();
    await registry.metrics();
    renders.push(performance.now() - t0);
    blocks.push(await lag.stop());
  }
  return { series: count, bytes, renderMs: { min: Math.min(...renders), ...distribution(renders) }, longestBlockMs: distribution(blocks) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { series: { type: 'string' }, repeats: { type: 'string' }, json: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) return void console.log(USAGE);
  const counts = (values.series ?? '20000,180000').split(',').map(Number);
  const repeats = Number(values.repeats ?? 5);
  if (counts.some((n) => !Number.isInteger(n) || n <= 0) || !Number.isInteger(repeats) || repeats <= 0) throw new Error('--series and --repeats take positive whole numbers');
  const results = [];
  for (const count of counts) {
    const r = await measure(count, repeats);
    results.push(r);
    const ms = (x: number) => `${x.toFixed(1)} ms`;
    console.log(`${count} series (${(r.bytes / 2 ** 20).toFixed(1)} MiB): registry.metrics() median ${ms(r.renderMs.p50)} (${ms(r.renderMs.min)}–${ms(r.renderMs.max)} over ${repeats}), longest event-loop block median ${ms(r.longestBlockMs.p50)}, max ${ms(r.longestBlockMs.max)}`);
  }
  saveFigures('prom-client', { repeats, results }, values.json);
}

main().catch((err: unknown) => {
  console.error('bench failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
