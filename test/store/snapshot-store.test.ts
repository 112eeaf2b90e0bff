import { describe, expect, it, vi } from 'vitest';
import { Registry } from 'prom-client';
import { SnapshotStore, type EndpointSettings } from '../../src/store/snapshot-store.js';
import { SLICE } from '../../src/store/series.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { PIECE_BYTES, TEXT_LINES } from '../../src/exposition/text-lines.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import type { DataEndpoint } from '../../src/api/endpoints.js';
import type { Sample } from '../../src/metrics/sample.js';
import { captureLogger } from '../helpers/log.js';

const SETTINGS: EndpointSettings = { intervalSeconds: 60, staleAfterSeconds: 180 };

function setup(maxSeries = 1000) {
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const log = captureLogger();
  const store = new SnapshotStore({ instruments, logger: log.logger, renderer: TEXT_LINES });
  const exposition = new Exposition(store);
  const endpoints = new Map<DataEndpoint, EndpointSettings>([
    ['connector', SETTINGS],
    ['license', SETTINGS],
    ['metrics_data', SETTINGS],
  ]);
  store.addStack('s1', endpoints, maxSeries);
  /** The exporter's own metric of stack s1, as its registry renders it. */
  const own = async (name: string) => (await instruments.registries.stack('s1')?.getSingleMetricAsString(name)) ?? '';
  return { store, exposition, own, log };
}

const connector = (name: string, value = 1): Sample => ({
  name: 'cmdb_connector_input_records',
  labels: { connector: name, profile: '' },
  value,
});

function lines(text: string, metric: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${metric}{`) || l.startsWith(`${metric} `));
}

describe('freshness', () => {
  it('a connector missing from a successful poll loses its series at once', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'connector', [connector('a'), connector('b')], 1000);
    expect(lines(exposition.text(1000), 'cmdb_connector_input_records')).toHaveLength(2);
    store.succeed('s1', 'connector', [connector('a')], 1060);
    expect(lines(exposition.text(1060), 'cmdb_connector_input_records')).toEqual([
      'cmdb_connector_input_records{stack="s1",connector="a",profile=""} 1',
    ]);
  });

  it('a failed poll sets cmdb_endpoint_up to 0 at once and keeps the last good series', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'connector', [connector('a', 5)], 1000);
    expect(exposition.text(1000)).toContain('cmdb_endpoint_up{stack="s1",endpoint="connector"} 1');
    store.fail('s1', 'connector');
    const text = exposition.text(1060);
    expect(text).toContain('cmdb_endpoint_up{stack="s1",endpoint="connector"} 0');
    expect(text).toContain('cmdb_connector_input_records{stack="s1",connector="a",profile=""} 5');
    expect(text).toContain('cmdb_endpoint_last_success_timestamp_seconds{stack="s1",endpoint="connector"} 1000');
  });

  it('drops the series of a failing endpoint once its last success is older than the stale limit', () => {
    const { store, exposition, log } = setup();
    store.succeed('s1', 'connector', [connector('a')], 1000);
    store.fail('s1', 'connector');
    store.expireStale(1180); // exactly at the limit
    expect(lines(exposition.text(1180), 'cmdb_connector_input_records')).toHaveLength(1);
    store.expireStale(1181);
    expect(lines(exposition.text(1181), 'cmdb_connector_input_records')).toHaveLength(0);
    expect(exposition.text(1181)).toContain('cmdb_endpoint_up{stack="s1",endpoint="connector"} 0');
    expect(log.lines().some((l) => String(l.msg).includes('stale limit'))).toBe(true);
  });

  it('expires stale series on a timer at the stale limit, whether anyone scrapes or not', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      vi.setSystemTime(1_000_000);
      const log = captureLogger();
      const now = () => Date.now() / 1000;
      const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger, now });
      store.addStack('s1', new Map<DataEndpoint, EndpointSettings>([['connector', SETTINGS]]), 1000);
      store.succeed('s1', 'connector', [connector('a')], now());
      await vi.advanceTimersByTimeAsync(60_000);
      store.fail('s1', 'connector');
      await vi.advanceTimersByTimeAsync(119_000); // 179 s after the last success: still held
      expect(store.seriesCount('s1')).toBe(1);
      await vi.advanceTimersByTimeAsync(2_000);
      // Nobody scraped: the series are gone and the log says so, on time.
      expect(store.seriesCount('s1')).toBe(0);
      expect(log.lines().filter((l) => String(l.msg).includes('stale limit'))).toHaveLength(1);
      // Healthy again: nothing to expire, no timer left behind.
      store.succeed('s1', 'connector', [connector('b')], now());
      await vi.advanceTimersByTimeAsync(3_600_000);
      expect(store.seriesCount('s1')).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
      store.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps the series of a healthy endpoint however old its data is', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'connector', [connector('a')], 1000);
    expect(lines(exposition.text(1_000_000), 'cmdb_connector_input_records')).toHaveLength(1);
  });

  it('a confirmed poll (no request needed) counts as a success', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'connector', [connector('a')], 1000);
    store.fail('s1', 'connector');
    store.confirm('s1', 'connector', 1100);
    const text = exposition.text(1100);
    expect(text).toContain('cmdb_endpoint_up{stack="s1",endpoint="connector"} 1');
    expect(text).toContain('cmdb_endpoint_last_success_timestamp_seconds{stack="s1",endpoint="connector"} 1100');
    expect(lines(text, 'cmdb_connector_input_records')).toHaveLength(1);
  });

  it('a partial failure replaces the series with the merged set and reports up 0', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'connector', [connector('a'), connector('b')], 1000);
    store.fail('s1', 'connector', [connector('a', 9)]);
    const text = exposition.text(1010);
    expect(lines(text, 'cmdb_connector_input_records')).toEqual([
      'cmdb_connector_input_records{stack="s1",connector="a",profile=""} 9',
    ]);
    expect(text).toContain('cmdb_endpoint_up{stack="s1",endpoint="connector"} 0');
  });

  it('exports up 0 for an endpoint before its first poll (a stack that cannot be reached reads down from the start), no last success', () => {
    const { store, exposition } = setup();
    const text = exposition.text(1000);
    expect(text).toContain('cmdb_endpoint_up{stack="s1",endpoint="license"} 0');
    expect(text).toContain('cmdb_endpoint_forbidden{stack="s1",endpoint="license"} 0');
    expect(text).not.toContain('cmdb_endpoint_last_success_timestamp_seconds{');
    expect(text).toContain('cmdb_endpoint_poll_interval_seconds{stack="s1",endpoint="license"} 60');
    // Not polled yet is still told apart from failed (readiness waits on it).
    expect(store.snapshot('s1', 'license')?.up).toBeUndefined();
  });
});

describe('license days until expiry', () => {
  it('is computed at scrape time from the expiry timestamp', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'license', [{ name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: 864000 }], 0);
    expect(exposition.text(0)).toContain('cmdb_license_days_until_expiry{stack="s1"} 10');
    expect(exposition.text(432000)).toContain('cmdb_license_days_until_expiry{stack="s1"} 5');
    expect(exposition.text(950400)).toContain('cmdb_license_days_until_expiry{stack="s1"} -1');
  });
});

describe('rendering', () => {
  it('renders once per change, not on each scrape', () => {
    const { store, exposition } = setup();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- spying on a private method
    const render = vi.spyOn(exposition as any, 'assemble');
    store.succeed('s1', 'connector', [connector('a')], 1000);
    exposition.text(1000);
    exposition.text(1001);
    exposition.text(1002);
    expect(render).toHaveBeenCalledTimes(1);
    store.succeed('s1', 'connector', [connector('b')], 1003);
    exposition.text(1003);
    expect(render).toHaveBeenCalledTimes(2);
  });

  it('renders an endpoint\'s series when they are swapped in, and not again for a status-only change', () => {
    const { store, exposition } = setup();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- spying on a private method
    const prepare = vi.spyOn(store as any, 'prepare');
    store.succeed('s1', 'connector', [connector('a')], 1000);
    store.succeed('s1', 'license', [{ name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: 5 }], 1000);
    expect(prepare).toHaveBeenCalledTimes(2);
    store.confirm('s1', 'connector', 1060);
    store.fail('s1', 'license');
    const text = exposition.text(1060);
    expect(prepare).toHaveBeenCalledTimes(2);
    expect(text).toContain('cmdb_connector_input_records{stack="s1",connector="a",profile=""} 1');
    expect(text).toContain('cmdb_endpoint_up{stack="s1",endpoint="license"} 0');
  });

  it('escapes hostile label values in the exposition', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'connector', [connector('Lab "East" \\ Zürich\nWing')], 1000);
    expect(exposition.text(1000)).toContain(
      'cmdb_connector_input_records{stack="s1",connector="Lab \\"East\\" \\\\ Zürich\\nWing",profile=""} 1',
    );
  });

  it('sorts series so the output is stable whatever the poll order', () => {
    const a = setup();
    const b = setup();
    a.store.succeed('s1', 'connector', [connector('x'), connector('a'), connector('m')], 1);
    b.store.succeed('s1', 'connector', [connector('m'), connector('x'), connector('a')], 1);
    expect(a.exposition.text(1)).toBe(b.exposition.text(1));
  });

  it('drops the series of a removed stack', () => {
    const { store, exposition } = setup();
    store.succeed('s1', 'connector', [connector('a')], 1000);
    store.removeStack('s1');
    expect(exposition.text(1000)).toBe('');
  });
});

describe('duplicates and the series cap', () => {
  it('merges duplicate label sets deterministically (first kept) and counts them', async () => {
    const { store, exposition, own } = setup();
    store.succeed('s1', 'connector', [connector('a', 1), connector('a', 2), connector('a', 3)], 1000);
    expect(lines(exposition.text(1000), 'cmdb_connector_input_records')).toEqual([
      'cmdb_connector_input_records{stack="s1",connector="a",profile=""} 1',
    ]);
    expect(await own('cmdb_duplicate_series_total')).toContain(
      'cmdb_duplicate_series_total{stack="s1"} 2',
    );
  });

  it('caps the series of a stack, counts and logs what it dropped, once', async () => {
    const { store, exposition, own, log } = setup(5);
    store.succeed('s1', 'metrics_data', [{ name: 'cmdb_assets', labels: {}, value: 1 }], 1000);
    const many = Array.from({ length: 10 }, (_, i) => connector(`c${i}`));
    store.succeed('s1', 'connector', many, 1000);
    store.succeed('s1', 'connector', many, 1060);
    expect(lines(exposition.text(1060), 'cmdb_connector_input_records')).toHaveLength(4);
    expect(store.seriesCount('s1')).toBe(5);
    expect(exposition.text(1060)).toContain('cmdb_series{stack="s1"} 5');
    expect(await own('cmdb_series_dropped_total')).toContain(
      'cmdb_series_dropped_total{stack="s1"} 12',
    );
    expect(log.lines().filter((l) => String(l.msg).startsWith('series cap reached'))).toHaveLength(1);
  });
});

describe('rendering off the scrape path', () => {
  it('assembles the text right after a burst of changes, once, before any scrape asks', async () => {
    const { store, exposition } = setup();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- spying on a private method
    const render = vi.spyOn(exposition as any, 'assemble');
    store.succeed('s1', 'connector', [connector('a')], 1000);
    store.succeed('s1', 'license', [{ name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: 5 }], 1000);
    expect(render).toHaveBeenCalledTimes(0);
    await new Promise((r) => setImmediate(r));
    expect(render).toHaveBeenCalledTimes(1);
    exposition.text(1000);
    expect(render).toHaveBeenCalledTimes(1);
  });
});

describe('large updates in slices, swapped whole', () => {
  const many = (n: number, value: number) => Array.from({ length: n }, (_, i) => connector(`c${String((i * 7919) % n).padStart(6, '0')}`, value));

  it('a large poll is prepared over several turns of the event loop and swapped in whole', async () => {
    const { store, exposition } = setup(100_000);
    store.succeed('s1', 'connector', many(10, 1), 1000);
    store.succeed('s1', 'connector', many(SLICE * 5, 2), 1060);
    // Still the old set: the new one is being prepared.
    expect(store.snapshot('s1', 'connector')?.samples).toHaveLength(10);
    const seenDuringPrepare: number[] = [];
    const watch = async () => {
      for (let i = 0; i < 3; i++) {
        seenDuringPrepare.push(store.snapshot('s1', 'connector')?.samples.length ?? -1);
        await new Promise((r) => setImmediate(r));
      }
    };
    await Promise.all([watch(), store.settled()]);
    // Other work ran while the update was prepared, and saw the old set or the new one, never a mix.
    expect(seenDuringPrepare.length).toBe(3);
    for (const n of seenDuringPrepare) expect([10, SLICE * 5]).toContain(n);
    // The update yields after every slice (at least five here), so two turns later it is not done yet.
    expect(seenDuringPrepare.slice(0, 2)).toEqual([10, 10]);
    expect(store.snapshot('s1', 'connector')).toMatchObject({ up: 1, lastSuccess: 1060 });
    expect(lines(exposition.text(1060), 'cmdb_connector_input_records')).toHaveLength(SLICE * 5);
  });

  it('updates apply in the order they arrived: a failure after a large success leaves it down with the new set', async () => {
    const { store } = setup(100_000);
    store.succeed('s1', 'connector', many(SLICE * 3, 2), 1000);
    store.fail('s1', 'connector');
    expect(store.snapshot('s1', 'connector')?.up).toBeUndefined();
    await store.settled();
    expect(store.snapshot('s1', 'connector')).toMatchObject({ up: 0, lastSuccess: 1000 });
    expect(store.snapshot('s1', 'connector')?.samples).toHaveLength(SLICE * 3);
  });

  it('a reader never waits for an update being applied: it gets the old set until the poll is complete, then the new one', async () => {
    const { store, exposition } = setup(100_000);
    await store.succeed('s1', 'connector', many(SLICE * 2, 4), 1000);
    const applied = store.succeed('s1', 'connector', many(SLICE * 3, 5), 1060);
    const before = lines(exposition.text(1060), 'cmdb_connector_input_records');
    expect(before).toHaveLength(SLICE * 2);
    expect(before.every((l) => l.endsWith(' 4'))).toBe(true);
    await applied;
    const after = lines(exposition.text(1060), 'cmdb_connector_input_records');
    expect(after).toHaveLength(SLICE * 3);
    expect(after.every((l) => l.endsWith(' 5'))).toBe(true);
  });

  it('sorts a family larger than a slice exactly as a single sort would', async () => {
    const { store, exposition } = setup(100_000);
    await store.succeed('s1', 'connector', many(SLICE * 4 + 17, 1), 1000);
    const got = lines(exposition.text(1000), 'cmdb_connector_input_records');
    expect(got).toHaveLength(SLICE * 4 + 17);
    expect(got).toEqual([...got].sort());
  });

  it('keeps the data bytes (and so their gzip) across status-only changes and polls that bring the same series', () => {
    const { store, exposition } = setup(100_000);
    store.succeed('s1', 'connector', many(50, 1), 1000);
    const data = () => exposition.segments().filter((s) => s.kind === 'data').flatMap((s) => s.parts);
    const status = () => exposition.segments().find((s) => s.kind === 'status')?.parts[0];
    const [d0, s0] = [data(), status()];
    store.confirm('s1', 'connector', 1030);
    store.succeed('s1', 'connector', many(50, 1), 1060);
    expect(data().every((b, i) => b === d0[i])).toBe(true);
    expect(status()).not.toBe(s0);
    store.succeed('s1', 'connector', many(50, 2), 1090);
    expect(data().some((b, i) => b !== d0[i])).toBe(true);
  });

  it('a data run is not copied whole: a large family is served from the Buffer its poll made, kept when another endpoint changes', async () => {
    const { store, exposition } = setup(100_000);
    await store.succeed('s1', 'connector', many(SLICE * 20, 1), 1000);
    const big = () => exposition.segments().flatMap((s) => s.parts).filter((b) => b.length >= PIECE_BYTES);
    const [before] = big();
    expect(before?.toString('utf8')).toMatch(/^cmdb_connector_input_records\{/);
    store.succeed('s1', 'license', [{ name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: 5 }], 1000);
    expect(exposition.text(1000)).toContain('cmdb_license_expiry_timestamp_seconds{stack="s1"} 5');
    expect(big()[0]).toBe(before);
  });

  it("keeps the collector's sample objects, not copies: a large poll adds no object per series to what the store holds", async () => {
    const { store } = setup(100_000);
    const samples = many(SLICE * 3, 1);
    store.succeed('s1', 'connector', samples, 1000);
    await store.settled();
    const held = store.snapshot('s1', 'connector')?.samples ?? [];
    expect(held).toHaveLength(samples.length);
    expect(held.every((s, i) => s === samples[i])).toBe(true);
  });
});
