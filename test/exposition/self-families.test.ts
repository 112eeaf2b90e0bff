/**
 * The exporter's own metrics as the exposition writes them from the registries' JSON: the same
 * lines prom-client writes for a registry (but for its blank lines between families and the
 * headers of families without a series), and on the whole /metrics one family per name with every
 * stack's series.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registryFamilies, wholeSelfFamilies } from '../../src/exposition/self-families.js';
import { TEXT_FORMAT } from '../../src/exposition/text-format.js';
import { createInstruments } from '../../src/metrics/instruments.js';

/** prom-client's text without the blank lines between families and the headers of families without a series. */
function promClientLines(text: string): string {
  const out: string[] = [];
  let header: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) header = [line];
    else if (line.startsWith('# TYPE ')) header.push(line);
    else {
      out.push(...header, line);
      header = [];
    }
  }
  return `${out.join('\n')}\n`;
}

function instrumented() {
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  // Label objects in another order than the catalogue's: prom-client writes them as first counted.
  instruments.requests.inc({ stack: 'b', endpoint: 'license', outcome: '200' }, 3);
  instruments.requests.inc({ outcome: '503', stack: 'a', endpoint: 'license' });
  instruments.requestDuration.observe({ stack: 'a', endpoint: 'license' }, 0.2);
  instruments.tokenRequests.inc({ stack: 'a', outcome: 'success' });
  instruments.rateLimitPausedUntil.set({ stack: 'a' }, 1_800_000_000.5);
  instruments.httpRefused.inc({ reason: 'auth "x"\n\\' });
  return { registry, instruments };
}

describe("the exporter's own families", () => {
  it("of one registry are written line for line as prom-client writes that registry", async () => {
    const { registry, instruments } = instrumented();
    for (const r of [registry, instruments.registries.stack('a'), instruments.registries.stack('b')]) {
      if (!r) throw new Error('no registry');
      expect(TEXT_FORMAT.write(await registryFamilies(r))).toBe(promClientLines(await r.metrics()));
    }
  });

  it('of the whole /metrics: prom-client\'s own first, then each per-stack family once with every stack\'s series, then the exporter\'s', async () => {
    const registry = new Registry();
    const instruments = createInstruments(registry, { defaultMetrics: true });
    instruments.requests.inc({ stack: 'b', endpoint: 'license', outcome: '200' }, 3);
    instruments.requests.inc({ stack: 'a', endpoint: 'license', outcome: '200' });
    const text = TEXT_FORMAT.write(await wholeSelfFamilies(instruments.registries));
    const families = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1] as string);
    expect(families.filter((f) => f === 'cmdb_endpoint_requests_total')).toHaveLength(1);
    const first = (name: string) => families.findIndex((f) => f.startsWith(name));
    expect(first('process_')).toBeLessThan(first('cmdb_endpoint_requests_total'));
    expect(first('nodejs_')).toBeLessThan(first('cmdb_endpoint_requests_total'));
    expect(first('cmdb_endpoint_requests_total')).toBeLessThan(first('cmdb_config_last_reload_successful'));
    // The stacks in the order they were first seen, each series once.
    expect(text).toContain(
      'cmdb_endpoint_requests_total{stack="b",endpoint="license",outcome="200"} 3\ncmdb_endpoint_requests_total{stack="a",endpoint="license",outcome="200"} 1\n',
    );
  });
});
