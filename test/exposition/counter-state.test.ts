/**
 * The `counters` part of a stack's state (--storage.path): each counter series of the stack's own
 * instruments kept with its value and its start, and read back by a new process before its first
 * scrape: the counters go on from their values, every format serves the original starts, and the
 * starts written at the next write are the same (they do not drift). Histograms and the
 * process-wide counters are not kept: they start again in each process, and so do their starts.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CounterState, countersStateFrom, type CountersState } from '../../src/exposition/counter-state.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { MetricsFormats } from '../../src/exposition/formats.js';
import { StartTimes } from '../../src/exposition/start-times.js';
import { TEXT_LINES } from '../../src/exposition/text-lines.js';
import { createInstruments, createStateInstruments, initStackInstruments } from '../../src/metrics/instruments.js';
import { restoredStack } from '../../src/stack-state.js';
import { STATE_FORMAT, STATE_VERSION } from '../../src/persist/document.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { captureLogger } from '../helpers/log.js';
import { decodeFamilies, seconds } from '../helpers/metric-family-decode.js';
import { testStack } from '../helpers/stack.js';

const FIRST = 1_800_000_000;

/** One process's instruments, starts and formats on its own clock (unix seconds). */
function processAt(at: { now: number }) {
  const now = () => at.now;
  const instruments = createInstruments(new Registry(), { defaultMetrics: false });
  createStateInstruments(instruments, () => []);
  const starts = new StartTimes(now);
  const counters = new CounterState(instruments.registries, starts);
  const { logger } = captureLogger('info');
  const store = new SnapshotStore({ instruments, logger, now, renderer: TEXT_LINES });
  const formats = new MetricsFormats({ exposition: new Exposition(store), registries: instruments.registries, now, starts, openMetricsCreated: true });
  initStackInstruments(instruments, 's1', ['connectors'], ['connector', 'license']);
  // As start() does: every reason from 0.
  instruments.httpRefused.inc({ reason: 'unauthorized' }, 0);
  return { instruments, starts, counters, formats };
}

/** The part as it comes back from the file: through JSON, then validated. */
const throughFile = (state: CountersState) => countersStateFrom(JSON.parse(JSON.stringify(state)));

/** Every counter and histogram series of the protobuf body: `family{labels}` → value (a histogram's count) and start. */
async function served(formats: MetricsFormats): Promise<Map<string, { value: number; start: number | undefined }>> {
  const body = Buffer.concat((await formats.whole('protobuf')).plain.parts);
  const out = new Map<string, { value: number; start: number | undefined }>();
  for (const f of decodeFamilies(body)) {
    for (const m of f.metric ?? []) {
      const key = `${f.name}{${(m.label ?? []).map((l) => `${l.name}=${l.value}`).join(',')}}`;
      if (m.counter) out.set(key, { value: m.counter.value ?? 0, start: seconds(m.counter.createdTimestamp) });
      if (m.histogram) out.set(key, { value: m.histogram.sampleCount ?? 0, start: seconds(m.histogram.createdTimestamp) });
    }
  }
  return out;
}

describe('the counters part', () => {
  it('a restart goes on counting from the kept values, and every series keeps its start, in protobuf and OpenMetrics', async () => {
    const clock = { now: FIRST };
    const first = processAt(clock);
    first.instruments.requests.inc({ stack: 's1', endpoint: 'connector', outcome: '200' }, 3);
    first.instruments.requestDuration.observe({ stack: 's1', endpoint: 'connector' }, 0.3);
    first.instruments.httpRefused.inc({ reason: 'unauthorized' });
    const before = await served(first.formats);
    clock.now = FIRST + 30;
    // Counted after the last scrape: its start is the write's.
    first.instruments.requests.inc({ stack: 's1', endpoint: 'license', outcome: '503' });
    const kept = throughFile(await first.counters.exportState('s1'));
    expect(kept).toBeDefined();
    expect(kept?.families.cmdb_endpoint_requests_total).toEqual([
      [{ endpoint: 'connector', outcome: '200' }, 3, FIRST],
      [{ endpoint: 'license', outcome: '503' }, 1, FIRST + 30],
    ]);
    // Histograms and the process-wide counters are not kept.
    expect(Object.keys(kept?.families ?? {})).not.toContain('cmdb_endpoint_request_duration_seconds');
    expect(Object.keys(kept?.families ?? {})).not.toContain('cmdb_exporter_http_requests_refused_total');

    const later = { now: FIRST + 600 };
    const second = processAt(later);
    second.counters.restore('s1', kept as CountersState);
    second.instruments.requests.inc({ stack: 's1', endpoint: 'connector', outcome: '200' });
    const after = await served(second.formats);
    const requests = (endpoint: string, outcome: string) => `cmdb_endpoint_requests_total{stack=s1,endpoint=${endpoint},outcome=${outcome}}`;
    expect(after.get(requests('connector', '200'))).toEqual({ value: 4, start: FIRST });
    expect(after.get(requests('license', '503'))).toEqual({ value: 1, start: FIRST + 30 });
    // Every kept series of the first process is served with its start and a value not lower.
    for (const [key, b] of before) {
      if (!key.includes('stack=s1') || key.startsWith('cmdb_endpoint_request_duration_seconds')) continue;
      expect(after.get(key)?.start, key).toBe(b.start);
      expect(after.get(key)?.value, key).toBeGreaterThanOrEqual(b.value);
    }
    // Not kept, so counting from 0 in this process, from its start.
    expect(after.get('cmdb_endpoint_request_duration_seconds{stack=s1,endpoint=connector}')).toBeUndefined();
    second.instruments.requestDuration.observe({ stack: 's1', endpoint: 'connector' }, 0.3);
    second.formats.selfMetricsChanged();
    expect((await served(second.formats)).get('cmdb_endpoint_request_duration_seconds{stack=s1,endpoint=connector}')).toEqual({ value: 1, start: FIRST + 600 });
    expect(after.get('cmdb_exporter_http_requests_refused_total{reason=unauthorized}')).toEqual({ value: 0, start: FIRST + 600 });

    const om = Buffer.concat((await second.formats.whole('openmetrics')).plain.parts).toString('utf8');
    expect(om).toContain(`cmdb_endpoint_requests_created{stack="s1",endpoint="connector",outcome="200"} ${FIRST}\n`);

    // The next write keeps the same starts: a start does not drift from one process to the next.
    later.now = FIRST + 700;
    const again = await second.counters.exportState('s1');
    expect(again.families.cmdb_endpoint_requests_total).toEqual([
      [{ endpoint: 'connector', outcome: '200' }, 4, FIRST],
      [{ endpoint: 'license', outcome: '503' }, 1, FIRST + 30],
    ]);
    expect(again.families.cmdb_token_requests_total?.map(([, , start]) => start)).toEqual([FIRST, FIRST, FIRST]);
  });

  it('the labels a series was counted with may come in any order: its start is the same', () => {
    const starts = new StartTimes(() => FIRST);
    starts.seed('cmdb_endpoint_requests_total', { endpoint: 'connector', stack: 's1', outcome: '200' }, 42);
    expect(starts.startOf('cmdb_endpoint_requests_total', { stack: 's1', outcome: '200', endpoint: 'connector' })).toBe(42);
  });

  it('a stack removed from the configuration loses its starts: added again, it counts from 0 from then', () => {
    const clock = { now: FIRST };
    const starts = new StartTimes(() => clock.now);
    expect(starts.startOf('cmdb_series_dropped_total', { stack: 's1' })).toBe(FIRST);
    expect(starts.startOf('cmdb_series_dropped_total', { stack: 's10' })).toBe(FIRST);
    clock.now = FIRST + 5;
    starts.forget('s1');
    expect(starts.startOf('cmdb_series_dropped_total', { stack: 's1' })).toBe(FIRST + 5);
    expect(starts.startOf('cmdb_series_dropped_total', { stack: 's10' })).toBe(FIRST);
  });

  it.each([
    ['another version', { v: 2, families: {} }],
    ['a value below 0', { v: 1, families: { cmdb_series_dropped_total: [[{}, -1, FIRST]] } }],
    ['a start that is no time', { v: 1, families: { cmdb_series_dropped_total: [[{}, 1, 0]] } }],
    ['a label the family does not have', { v: 1, families: { cmdb_endpoint_requests_total: [[{ endpoint: 'license', outcome: '200', host: 'x' }, 1, FIRST]] } }],
    ['no list of series', { v: 1, families: { cmdb_series_dropped_total: 3 } }],
  ])('%s does not validate', (_what, part) => {
    expect(countersStateFrom(part)).toBeUndefined();
  });

  it('a family this version does not count per stack is left out, the others are read', () => {
    const part = { v: 1, families: { cmdb_series_dropped_total: [[{}, 2, FIRST]], cmdb_counted_by_a_later_version_total: [[{}, 1, FIRST]], cmdb_exporter_http_requests_refused_total: [[{ reason: 'unauthorized' }, 1, FIRST]] } };
    expect(countersStateFrom(part)).toEqual({ v: 1, families: { cmdb_series_dropped_total: [[{}, 2, FIRST]] } });
  });

  it('a stack whose counters part does not validate starts cold, and the part is named', () => {
    const stack = testStack({ name: 's1' });
    const doc = { format: STATE_FORMAT, version: STATE_VERSION, stack: 's1', service: 'x', writtenAt: FIRST, parts: { counters: { v: 1, families: { cmdb_series_dropped_total: [[{}, 'many', FIRST]] } } } };
    expect(restoredStack(stack, { doc: doc as never, ageSeconds: 10, refresh: false })).toEqual({ invalid: 'counters' });
    const good = { ...doc, parts: { counters: { v: 1, families: { cmdb_series_dropped_total: [[{}, 2, FIRST]] } } } };
    const restored = restoredStack(stack, { doc: good as never, ageSeconds: 7200, refresh: true });
    // Past the restore bound too: a count is a count, whatever else is read again.
    expect(restored).toMatchObject({ counters: { v: 1, families: { cmdb_series_dropped_total: [[{}, 2, FIRST]] } } });
  });
});
