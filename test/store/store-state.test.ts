/**
 * The store's part of a state file: what it serves goes out (series, up, forbidden, last success)
 * and comes back the same, served once applied and marked restored until a poll succeeds;
 * anything that is not a valid state is no state.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { DataEndpoint } from '../../src/api/endpoints.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import type { Sample } from '../../src/metrics/sample.js';
import { jsonPieces } from '../../src/persist/json-pieces.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { TEXT_LINES } from '../../src/exposition/text-lines.js';
import { SLICE } from '../../src/store/series.js';
import { SnapshotStore, type EndpointSettings } from '../../src/store/snapshot-store.js';
import { storeStateFrom, STORE_STATE_VERSION } from '../../src/store/store-state.js';
import { captureLogger } from '../helpers/log.js';

const SETTINGS: EndpointSettings = { intervalSeconds: 60, staleAfterSeconds: 180 };
const ENDPOINTS = new Map<DataEndpoint, EndpointSettings>([
  ['connector', SETTINGS],
  ['license', SETTINGS],
  ['action_jobs', SETTINGS],
]);

function newStore(maxSeries = 100_000) {
  const log = captureLogger();
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger, renderer: TEXT_LINES });
  store.addStack('s1', ENDPOINTS, maxSeries);
  return { store, exposition: new Exposition(store), log };
}

const records = (n: number, value = (i: number) => i): Sample[] =>
  Array.from({ length: n }, (_, i) => ({ name: 'cmdb_connector_input_records', labels: { connector: `c${i}`, profile: 'p "1"\n' }, value: value(i) }));

/** The store's part as a state file holds it: written by jsonPieces, parsed back. */
async function onDisk(store: SnapshotStore): Promise<unknown> {
  let text = '';
  for await (const piece of jsonPieces(store.exportStack('s1'))) text += piece;
  return JSON.parse(text) as unknown;
}

describe("the store's state", () => {
  it('comes back as it was served: series (NaN and infinities too), up, forbidden and last success', async () => {
    const a = newStore();
    a.store.succeed('s1', 'connector', records(SLICE * 3, (i) => (i === 0 ? Number.NaN : i === 1 ? Infinity : i === 2 ? -Infinity : i / 3)), 1000);
    a.store.succeed('s1', 'license', [{ name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: 2_000_000_000 }], 1010);
    a.store.fail('s1', 'license', undefined, true);
    await a.store.settled();
    const before = a.exposition.text(2000);

    const restored = storeStateFrom(await onDisk(a.store));
    expect(restored).toBeDefined();
    const b = newStore();
    // Served byte for byte once applied (in slices, as a poll's series are).
    await b.store.restoreStack('s1', restored ?? []);
    expect(b.exposition.text(2000)).toBe(before);
    expect(b.store.snapshot('s1', 'license')).toMatchObject({ up: 0, forbidden: 1, lastSuccess: 1010, restored: true });
    expect(b.store.snapshot('s1', 'action_jobs')).toMatchObject({ up: undefined, restored: true });
    expect(b.store.restoredAges(1100)).toEqual([
      { stack: 's1', endpoint: 'connector', ageSeconds: 100 },
      { stack: 's1', endpoint: 'license', ageSeconds: 90 },
    ]);
  });

  it('is restored until a poll succeeds; a failed poll leaves it restored', async () => {
    const a = newStore();
    a.store.succeed('s1', 'connector', records(3), 1000);
    a.store.succeed('s1', 'license', [], 1000);
    const b = newStore();
    b.store.restoreStack('s1', storeStateFrom(await onDisk(a.store)) ?? []);
    await b.store.settled();
    b.store.fail('s1', 'connector');
    b.store.confirm('s1', 'license', 1500);
    expect(b.store.restoredAges(1600).map((r) => r.endpoint)).toEqual(['connector']);
    b.store.succeed('s1', 'connector', records(3), 1600);
    expect(b.store.restoredAges(1600)).toEqual([]);
  });

  it('goes through the series cap of the stack as configured now', async () => {
    const a = newStore();
    a.store.succeed('s1', 'connector', records(50), 1000);
    const b = newStore(10);
    b.store.restoreStack('s1', storeStateFrom(await onDisk(a.store)) ?? []);
    await b.store.settled();
    expect(b.store.seriesCount('s1')).toBe(10);
    expect(b.log.text()).toContain('series cap reached');
  });

  it('moves the change marks: series changes apart from changes of times only', () => {
    const { store } = newStore();
    expect(store.changeMarks('s1')).toBeUndefined();
    store.succeed('s1', 'connector', records(2), 1000);
    const first = store.changeMarks('s1');
    store.confirm('s1', 'connector', 1060);
    const confirmed = store.changeMarks('s1');
    expect(confirmed?.data).toBe(first?.data);
    expect(confirmed?.status).toBeGreaterThan(first?.status ?? Infinity);
    store.succeed('s1', 'connector', records(2, (i) => i + 1), 1120);
    expect(store.changeMarks('s1')?.data).toBeGreaterThan(confirmed?.data ?? Infinity);
  });

  it("moves `appeared` when an endpoint gets its first outcome or series, not when they change", async () => {
    const { store } = newStore();
    await store.succeed('s1', 'connector', records(2), 1000);
    const first = store.changeMarks('s1')?.appeared;
    expect(first).toBeDefined();
    await store.succeed('s1', 'connector', records(2, (i) => i + 1), 1060);
    await store.fail('s1', 'connector');
    expect(store.changeMarks('s1')?.appeared).toBe(first);
    // Another endpoint's first outcome (a failure, no series): what the file lacks entirely.
    await store.fail('s1', 'license');
    const second = store.changeMarks('s1')?.appeared ?? 0;
    expect(second).toBeGreaterThan(first ?? Infinity);
    // Its first series, after the failure.
    await store.succeed('s1', 'license', [{ name: 'cmdb_license_info', labels: {}, value: 1 }], 1100);
    expect(store.changeMarks('s1')?.appeared).toBeGreaterThan(second);
  });

  it.each([
    ['another version', { v: STORE_STATE_VERSION + 1, endpoints: [] }],
    ['an unknown endpoint', { v: 1, endpoints: [{ endpoint: 'nope', samples: [] }] }],
    ['a family of another endpoint', { v: 1, endpoints: [{ endpoint: 'license', samples: [['cmdb_connector_input_records', {}, 1]] }] }],
    ['a label that is not text', { v: 1, endpoints: [{ endpoint: 'connector', samples: [['cmdb_connector_input_records', { connector: 1 }, 1]] }] }],
    ['a value that is not a number', { v: 1, endpoints: [{ endpoint: 'connector', samples: [['cmdb_connector_input_records', {}, 'many']] }] }],
    ['an up of 2', { v: 1, endpoints: [{ endpoint: 'connector', up: 2, samples: [] }] }],
    ['no list', { v: 1 }],
  ])('is no state with %s', (_what, value) => {
    expect(storeStateFrom(value)).toBeUndefined();
  });
});
