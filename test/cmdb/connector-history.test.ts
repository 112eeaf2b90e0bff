/**
 * The connector history reader: full scans, incremental merges of `sort=_time,desc` pages, the sort
 * check with its full-scan fallback, and which scan drops vanished connectors. The pages go through
 * the same reduction as in the exporter (reduceConnectorPage, then the endpoint's schema).
 */
import { describe, expect, it } from 'vitest';
import { ConnectorPageSchema, validate, type ConnectorRun } from '../../src/api/schemas.js';
import type { ScanPosition } from '../../src/cmdb/readers/connector-history-state.js';
import {
  ConnectorHistoryReader,
  continues,
  INCREMENTAL_MARGIN_SECONDS,
  type HistoryIo,
  type HistoryPage,
  type EveryRunPage,
  type HistoryScan,
  type ScanKind,
  type ScanProgress,
} from '../../src/cmdb/readers/connector-history.js';
import { createScanReducers, type KnownTimes, type ScanReducers } from '../../src/cmdb/page-reducer.js';

const T0 = 1_785_000_000;
const DAY = 86_400;

interface Row {
  bridge_name: string;
  profile: string | null;
  platform: string;
  status: string;
  _time: number;
}
const row = (bridge: string, time: number, status = 'Success', profile: string | null = 'prod'): Row => ({
  bridge_name: bridge,
  profile,
  platform: 'api',
  status,
  _time: time,
});

class PageTimeout extends Error {}

/** A fake CMDB: serves `rows` in their own order, or sorted by _time descending unless told to ignore the sort. */
class FakeHistory implements HistoryIo {
  rows: Row[] = [];
  ignoreSort = false;
  readonly requests: Array<{ page: number; size: number; sort: string | undefined; rows: number }> = [];
  readonly scans: ScanKind[] = [];
  readonly unsortedPages: number[] = [];
  readonly offUntil: Array<number | undefined> = [];
  readonly progressed: ScanProgress[] = [];
  /** The exporter's clock as the reader sees it (scan starts, progress). */
  at = T0 + 3600;
  /** Pages of at least this many rows time out (page-size adaptation). */
  timeoutAbove = Infinity;

  /** Serves one page as the exporter reads it: through the same scan reduction. */
  async fetchPage(page: number, size: number, sort: string | undefined, reducers: ScanReducers): Promise<HistoryPage> {
    const ordered = sort === '_time,desc' && !this.ignoreSort ? [...this.rows].sort((a, b) => b._time - a._time) : this.rows;
    const content = ordered.slice(page * size, (page + 1) * size);
    this.requests.push({ page, size, sort, rows: content.length });
    if (size >= this.timeoutAbove) throw new PageTimeout();
    const answer = reducers.page(1, JSON.stringify({ content, totalPages: Math.ceil(ordered.length / size), number: page }));
    if (answer.kind !== 'page') throw new Error('expected a page');
    const result = validate(ConnectorPageSchema, { ...answer.envelope, content: [] });
    if (!result.ok) throw new Error(result.message);
    const { sorted, first, last, min, count, fresh, firstFresh } = answer;
    return { count, fields: result.value, sorted, first, last, min, fresh, firstFresh };
  }

  scan(known: KnownTimes): HistoryScan {
    const reducers = createScanReducers();
    reducers.begin(1, known);
    return {
      fetchPage: (page, size, sort) => this.fetchPage(page, size, sort, reducers),
      rows: async () => {
        const result = validate(ConnectorPageSchema, { content: reducers.finish(1) });
        if (!result.ok) throw new Error(result.message);
        return result.value.content;
      },
      peek: async () => {
        const result = validate(ConnectorPageSchema, { content: reducers.peek(1) });
        if (!result.ok) throw new Error(result.message);
        return result.value.content;
      },
      drop: () => reducers.drop(1),
    };
  }

  async everyRunPage(page: number, size: number, sort: string | undefined): Promise<EveryRunPage> {
    const reducers = createScanReducers();
    reducers.begin(1, []);
    const p = await this.fetchPage(page, size, sort, reducers);
    const ordered = sort === '_time,desc' && !this.ignoreSort ? [...this.rows].sort((a, b) => b._time - a._time) : this.rows;
    return { ...p, rows: ordered.slice(page * size, (page + 1) * size) as unknown as ConnectorRun[] };
  }

  scanned(kind: ScanKind): void {
    this.scans.push(kind);
  }
  unsorted(page: number, offUntil: number | undefined): void {
    this.unsortedPages.push(page);
    this.offUntil.push(offUntil);
  }
  truncated(): void {}
  now(): number {
    return this.at;
  }
  progress(p: ScanProgress): void {
    this.progressed.push(p);
  }
  pageSize(): void {}
  isPageTimeout(err: unknown): boolean {
    return err instanceof PageTimeout;
  }
}

const reader = (pageSize = 4, maxPages = 100) => new ConnectorHistoryReader({ pageSize, maxPages, fullScanIntervalSeconds: DAY, timeZone: 'UTC', timeoutSeconds: 30, retries: 2 });
const read = async (r: ConnectorHistoryReader, io: FakeHistory, now: number) => (await r.read(io, now)).runs;
const byKey = (runs: ConnectorRun[]) => Object.fromEntries(runs.map((r) => [`${r.bridge_name}/${String(r.profile)}`, r._time]));

/** 30 connectors with 5 daily runs each, shuffled (the service's own order is not by time). */
function history(): Row[] {
  const rows: Row[] = [];
  for (let c = 0; c < 30; c++) for (let d = 0; d < 5; d++) rows.push(row(`c${c}`, T0 - d * DAY - c * 60));
  // A deterministic shuffle.
  return rows.map((r, i) => ({ r, k: (i * 7919) % rows.length })).sort((a, b) => a.k - b.k).map((x) => x.r);
}

describe('connector history reader', () => {
  it('first poll: a full scan sorted by _time descending, newest run per key', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const runs = await read(reader(), io, T0 + 60);
    expect(io.scans).toEqual(['full']);
    expect(io.requests.every((r) => r.sort === '_time,desc')).toBe(true);
    expect(io.requests).toHaveLength(Math.ceil(150 / 4));
    expect(runs).toHaveLength(30);
    expect(byKey(runs)['c3/prod']).toBe(T0 - 180);
  });

  it('later polls: sorted pages, stop at the first page older than the newest held minus the margin, new rows merged', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const r = reader(4);
    await r.read(io, T0 + 60);
    io.requests.length = 0;
    io.rows.push(row('c5', T0 + 3600, 'Error'), row('new_connector', T0 + 3000));
    const runs = await read(r, io, T0 + 7200);
    expect(io.scans).toEqual(['full', 'incremental']);
    expect(io.requests.every((q) => q.sort === '_time,desc')).toBe(true);
    // The 2 new rows are on page 0; page 1 holds nothing new and ends the read.
    expect(io.requests).toHaveLength(2);
    expect(io.requests.length).toBeLessThan(38 / 4);
    const keys = byKey(runs);
    expect(keys['c5/prod']).toBe(T0 + 3600);
    expect(runs.find((x) => x.bridge_name === 'c5')?.status).toBe('Error');
    expect(keys['new_connector/prod']).toBe(T0 + 3000);
    // Connectors outside the window keep their last known newest run.
    expect(Object.keys(keys)).toHaveLength(31);
    expect(keys['c29/prod']).toBe(T0 - 29 * 60);
  });

  it('a late row on a page read for new rows is merged; one below an all-known page waits for the full scan', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const r = reader(4);
    await r.read(io, T0 + 60);
    const newest = T0; // c0's newest run
    io.rows.push(row('fresh', newest + 60), row('late_inside', newest - 30), row('late_outside', newest - INCREMENTAL_MARGIN_SECONDS + 10));
    const runs = await read(r, io, T0 + 120);
    const keys = byKey(runs);
    expect(keys['late_inside/prod']).toBe(newest - 30);
    expect(keys['late_outside/prod']).toBeUndefined();
    // The next full scan sees it.
    const later = await read(r, io, T0 + DAY + 60);
    expect(io.scans.at(-1)).toBe('full');
    expect(byKey(later)['late_outside/prod']).toBe(newest - INCREMENTAL_MARGIN_SECONDS + 10);
  });

  it('an unchanged history: one page of the incremental read', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const r = new ConnectorHistoryReader({ pageSize: 2000, maxPages: 100, fullScanIntervalSeconds: DAY, timeZone: 'UTC' });
    await r.read(io, T0 + 60);
    io.requests.length = 0;
    const result = await r.read(io, T0 + 360);
    expect(result.changed).toBe(false);
    expect(io.requests).toEqual([{ page: 0, size: 25, sort: '_time,desc', rows: 25 }]);
  });

  it('a truncated full scan never replaces a newer held row', async () => {
    const io = new FakeHistory();
    io.rows = history();
    // Pages of 4, at most 2: a full scan keeps the 8 newest rows.
    const r = new ConnectorHistoryReader({ pageSize: 4, maxPages: 2, fullScanIntervalSeconds: 1, timeZone: 'UTC' });
    await r.read(io, T0);
    const first = byKey((await r.read(io, T0 + 10)).runs);
    // The service now ignores the sort: the next full scan reads an arbitrary, older slice.
    io.ignoreSort = true;
    const later = byKey((await r.read(io, T0 + 20)).runs);
    for (const [key, time] of Object.entries(first)) expect(later[key]).toBe(time);
  });

  it('an unsorted page falls back to a full scan for that poll only; a second in a row switches incremental reads off for an hour', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const r = reader(4);
    await r.read(io, T0 + 60);
    io.ignoreSort = true;
    io.rows.push(row('c1', T0 + 500, 'Warning'));
    io.requests.length = 0;
    const runs = await read(r, io, T0 + 600);
    expect(io.unsortedPages).toEqual([0]);
    expect(io.offUntil).toEqual([undefined]);
    expect(io.scans).toEqual(['full', 'full']);
    expect(byKey(runs)['c1/prod']).toBe(T0 + 500);
    // The fallback read every page.
    expect(io.requests.filter((q) => q.size === 4)).toHaveLength(1 + Math.ceil(151 / 4));
    expect(r.incrementalOffUntil(T0 + 600)).toBeUndefined();
    // Next poll tries again; unsorted again: off for an hour.
    await r.read(io, T0 + 900);
    expect(io.unsortedPages).toEqual([0, 0]);
    expect(io.offUntil).toEqual([undefined, T0 + 900 + 3600]);
    expect(r.incrementalOffUntil(T0 + 1000)).toBe(T0 + 900 + 3600);
    io.requests.length = 0;
    await r.read(io, T0 + 1200);
    expect(io.scans.at(-1)).toBe('full');
    expect(io.unsortedPages).toHaveLength(2);
    expect(io.requests.every((q) => q.page > 0 || q.size === 4)).toBe(true);
  });

  it('pages sorted each on its own but not across pages are caught too', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const r = reader(4);
    await r.read(io, T0 + 60);
    // Page 0 descending, page 1 starting newer than page 0 ended.
    const sortedOnce = io.fetchPage.bind(io);
    io.fetchPage = async (page, size, sort, reducers) => {
      const p = await sortedOnce(page, size, sort, reducers);
      return sort && page === 1 ? { ...p, first: T0 - 1, firstFresh: T0 - 1 } : p;
    };
    io.rows.push(...Array.from({ length: 8 }, (_, i) => row(`burst${i}`, T0 - i)));
    await r.read(io, T0 + 600);
    expect(io.unsortedPages).toEqual([1]);
    expect(io.scans.at(-1)).toBe('full');
  });

  it('a vanished connector is kept by incremental polls and dropped only by the next full scan', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const r = reader(4);
    await r.read(io, T0 + 60);
    io.rows = io.rows.filter((x) => x.bridge_name !== 'c2');
    const incremental = await read(r, io, T0 + 600);
    expect(io.scans.at(-1)).toBe('incremental');
    expect(byKey(incremental)['c2/prod']).toBe(T0 - 120);
    const full = await read(r, io, T0 + DAY + 60);
    expect(io.scans.at(-1)).toBe('full');
    expect(byKey(full)['c2/prod']).toBeUndefined();
    expect(full).toHaveLength(29);
  });

  it('a scan of every run (a backfill) hands every row to the visitor, a timed-out page asked again at half the size', async () => {
    const h = new FakeHistory();
    h.rows = Array.from({ length: 300 }, (_, i) => row(`c${i % 30}`, T0 - i * 60));
    h.timeoutAbove = 200;
    const reader = new ConnectorHistoryReader({ pageSize: 200, maxPages: 100, fullScanIntervalSeconds: DAY, timeZone: 'UTC' });
    const seen: ConnectorRun[] = [];
    const walked = await reader.everyRun(h, (rows) => seen.push(...rows));
    expect(h.requests.map((r) => r.size)).toEqual([200, 100, 100, 100]);
    expect(seen).toHaveLength(300);
    expect(new Set(seen.map((r) => r._time)).size).toBe(300);
    expect(walked).toMatchObject({ rows: 300, pages: 3, truncated: false });
    // The learned size is the reader's: the daemon's next full scan starts there too.
    expect(reader.pageSize()).toBe(100);
  });

  it('a scan of every run goes on from the position an earlier one reached: the pages after it only, the position after each page', async () => {
    const h = new FakeHistory();
    h.rows = Array.from({ length: 250 }, (_, i) => row(`c${i % 30}`, T0 - i * 60));
    const settings = { pageSize: 50, maxPages: 100, fullScanIntervalSeconds: DAY, timeZone: 'UTC' };
    const real = h.everyRunPage.bind(h);
    // The first scan stops at page 2 (a page that keeps failing, a stop).
    h.everyRunPage = async (page, size, sort) => {
      if (page === 2) throw new Error('503');
      return real(page, size, sort);
    };
    const positions: ScanPosition[] = [];
    const firstRows: ConnectorRun[] = [];
    await expect(new ConnectorHistoryReader(settings).everyRun(h, (rows, at) => (firstRows.push(...rows), positions.push(at)))).rejects.toThrow('503');
    expect(positions.map((p) => [p.page, p.size, p.pagesRead, p.rowsRead])).toEqual([
      [1, 50, 1, 50],
      [2, 50, 2, 100],
    ]);
    h.everyRunPage = real;
    h.requests.length = 0;
    h.at += 600;

    // A later run (a new reader) goes on from page 2: the scan's start and counts carried, the page cap counting the whole scan.
    const kept = positions.at(-1) as ScanPosition;
    const rest: ConnectorRun[] = [];
    const after: ScanPosition[] = [];
    const walked = await new ConnectorHistoryReader(settings).everyRun(h, (rows, at) => (rest.push(...rows), after.push(at)), kept);
    expect(h.requests.map((r) => r.page)).toEqual([2, 3, 4]);
    expect(walked).toMatchObject({ rows: 250, pages: 5, truncated: false });
    expect(after.map((p) => [p.page, p.pagesRead, p.startedAt])).toEqual([
      [3, 3, kept.startedAt],
      [4, 4, kept.startedAt],
      [5, 5, kept.startedAt],
    ]);
    expect(new Set([...firstRows, ...rest].map((r) => r._time)).size).toBe(250);

    // Under another sort, or from pages larger than configured now, the scan starts over.
    for (const [from, now] of [
      [kept, { ...settings, fullScanSort: 'bridge_name,asc' }],
      [kept, { ...settings, pageSize: 40 }],
    ] as const) {
      h.requests.length = 0;
      await new ConnectorHistoryReader(now).everyRun(h, () => undefined, from);
      expect(h.requests[0]?.page).toBe(0);
      expect(continues(from, now)).toBe(false);
    }
    expect(continues(kept, settings)).toBe(true);
  });

  it('a failed incremental poll leaves what is held untouched', async () => {
    const io = new FakeHistory();
    io.rows = history();
    const r = reader(4);
    await r.read(io, T0 + 60);
    const real = io.fetchPage.bind(io);
    io.rows.push(...Array.from({ length: 6 }, (_, i) => row(`c${i}`, T0 + 100 + i)));
    io.fetchPage = async (page, size, sort, reducers) => {
      if (page === 1) throw new Error('503');
      return real(page, size, sort, reducers);
    };
    await expect(r.read(io, T0 + 600)).rejects.toThrow('503');
    io.fetchPage = real;
    io.rows = history();
    const runs = await read(r, io, T0 + 700);
    expect(byKey(runs)['c0/prod']).toBe(T0);
  });
});
