/**
 * Every format of /metrics from one store and one set of instruments: OpenMetrics carries exactly
 * the text format's samples (names, labels, values), ends with `# EOF`, and gives each counter and
 * histogram series its start in `_created` when asked to.
 */
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DataEndpoint } from '../../src/api/endpoints.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { MetricsFormats, type BodyKind } from '../../src/exposition/formats.js';
import { TEXT_LINES } from '../../src/exposition/text-lines.js';
import { createInstruments, initStackInstruments } from '../../src/metrics/instruments.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { canonicalSamples, parseExposition } from '../helpers/exposition.js';
import { captureLogger } from '../helpers/log.js';

const SETTINGS = { intervalSeconds: 60, staleAfterSeconds: 180 };
const NOW = 1_800_000_000;
let clock = NOW;

const bodies = async (formats: MetricsFormats, kind: BodyKind, stack?: string) => {
  const response = await (stack === undefined ? formats.whole(kind) : formats.stack(stack, kind));
  if (!response) throw new Error(`no response for ${stack}`);
  return Buffer.concat(response.plain.parts);
};
/** Sample lines, each with its labels sorted (prom-client writes a bucket's `le` first, a decoded Metric last). */
const samplesOf = (text: string) => canonicalSamples(text.split('\n').filter((l) => l !== '' && !l.startsWith('#')));

function setUp(openMetricsCreated: boolean) {
  const registry = new Registry();
  // Without the process and Node.js metrics: they change between two renders of the same moment.
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const { logger } = captureLogger('info');
  const store = new SnapshotStore({ instruments, logger, renderer: TEXT_LINES });
  const exposition = new Exposition(store);
  const formats = new MetricsFormats({ exposition, registries: instruments.registries, now: () => clock, openMetricsCreated });
  return { instruments, store, formats };
}

describe('the formats of /metrics', () => {
  const { instruments, store, formats } = setUp(true);

  beforeAll(async () => {
    store.addStack('s1', new Map<DataEndpoint, typeof SETTINGS>([['connector', SETTINGS], ['license', SETTINGS]]), 100_000);
    initStackInstruments(instruments, 's1', ['connector'], ['connector', 'license']);
    instruments.requests.inc({ stack: 's1', endpoint: 'connector', outcome: '200' }, 3);
    instruments.requestDuration.observe({ stack: 's1', endpoint: 'connector' }, 0.3);
    await store.succeed(
      's1',
      'connector',
      [
        { name: 'cmdb_connector_input_records', labels: { connector: 'say "hi"\nZürich', profile: 'p\\1' }, value: 12 },
        { name: 'cmdb_connector_input_records', labels: { connector: 'b', profile: 'p' }, value: 1.5e21 },
      ],
      NOW,
    );
    await store.succeed(
      's1',
      'license',
      [
        { name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: NOW + 86_400 * 10 },
        { name: 'cmdb_license_info', labels: { license_type: 't', customer_name: 'c' }, value: 1 },
      ],
      NOW,
    );
  });

  it('OpenMetrics has the text format samples, line for line (_created aside), and ends with # EOF', async () => {
    const text = (await bodies(formats, 'text')).toString();
    const om = (await bodies(formats, 'openmetrics')).toString();
    expect(om.endsWith('\n# EOF\n')).toBe(true);
    expect(om.split('# EOF').length).toBe(2);
    const omSamples = samplesOf(om).filter((l) => !/^\w+_created[{ ]/.test(l));
    expect(omSamples.sort()).toEqual(samplesOf(text).sort());
    parseExposition(text); // the text stays valid 0.0.4
  });

  it('OpenMetrics declares counters without _total, info families, units, and a _created per counter series', async () => {
    const om = (await bodies(formats, 'openmetrics')).toString();
    expect(om).toContain('# TYPE cmdb_endpoint_requests counter\n');
    expect(om).toMatch(/\ncmdb_endpoint_requests_total\{stack="s1",endpoint="connector",outcome="200"\} 3\ncmdb_endpoint_requests_created\{stack="s1",endpoint="connector",outcome="200"\} 1800000000\n/);
    expect(om).toContain('# TYPE cmdb_license info\n');
    expect(om).toContain('# TYPE cmdb_endpoint_request_duration_seconds histogram\n# UNIT cmdb_endpoint_request_duration_seconds seconds\n');
    expect(om).toContain('cmdb_endpoint_request_duration_seconds_created{stack="s1",endpoint="connector"} 1800000000\n');
    expect(om).toContain('# TYPE cmdb_rate_limit_wait_seconds counter\n# UNIT cmdb_rate_limit_wait_seconds seconds\n');
    expect(om).toContain('# TYPE cmdb_license_expiry_timestamp_seconds gauge\n# UNIT cmdb_license_expiry_timestamp_seconds seconds\n');
    // Text stays as it was: the same families under their text names, gauges for info.
    const text = (await bodies(formats, 'text')).toString();
    expect(text).toContain('# TYPE cmdb_endpoint_requests_total counter\n');
    expect(text).toContain('# TYPE cmdb_license_info gauge\n');
    expect(text).not.toContain('_created');
  });

  it('a series first seen later starts at the read before it was counted; one seen before keeps its start', async () => {
    const startOf = (om: string, endpoint: string, outcome: string) => om.match(new RegExp(`^cmdb_endpoint_requests_created\\{stack="s1",endpoint="${endpoint}",outcome="${outcome}"\\} (\\S+)$`, 'm'))?.[1];
    // A read at NOW + 10 that finds nothing new, then a new series counted and read at NOW + 30.
    clock = NOW + 10;
    formats.selfMetricsChanged();
    expect(startOf((await bodies(formats, 'openmetrics')).toString(), 'license', '500')).toBeUndefined();
    clock = NOW + 30;
    instruments.requests.inc({ stack: 's1', endpoint: 'license', outcome: '500' });
    instruments.requests.inc({ stack: 's1', endpoint: 'connector', outcome: '200' });
    formats.selfMetricsChanged();
    const om = (await bodies(formats, 'openmetrics')).toString();
    // Not counted at NOW + 10 (that read had every series): it starts then, earlier than any scrape that sees it.
    expect(startOf(om, 'license', '500')).toBe(String(NOW + 10));
    expect(startOf(om, 'connector', '200')).toBe(String(NOW));
  });

  it("a stack's target and the exporter's own metrics come in every format", async () => {
    const text = (await bodies(formats, 'text', 's1')).toString();
    const om = (await bodies(formats, 'openmetrics', 's1')).toString();
    expect(om.endsWith('# EOF\n')).toBe(true);
    expect(samplesOf(om).filter((l) => !/^\w+_created[{ ]/.test(l)).sort()).toEqual(samplesOf(text).sort());
    const own = await formats.exporter('openmetrics');
    expect(Buffer.concat(own.plain.parts).toString()).toMatch(/# TYPE cmdb_exporter_build info\ncmdb_exporter_build_info\{[^}]*\} 1\n# EOF\n$/);
  });

  it('gzip of each format decodes to its plain body', async () => {
    const { gunzipSync } = await import('node:zlib');
    for (const kind of ['text', 'openmetrics'] as const) {
      const r = await formats.whole(kind);
      expect(gunzipSync(Buffer.concat((await r.gzip()).parts)).equals(Buffer.concat(r.plain.parts))).toBe(true);
    }
  });
});

describe('OpenMetrics without --web.openmetrics-created', () => {
  it('writes no _created line', async () => {
    const { instruments, formats } = setUp(false);
    instruments.httpRefused.inc({ reason: 'unauthorized' });
    const om = (await bodies(formats, 'openmetrics')).toString();
    expect(om).not.toMatch(/_created/);
    expect(om).toContain('cmdb_exporter_http_requests_refused_total{reason="unauthorized"} 1\n');
  });
});
