import { describe, expect, it } from 'vitest';
import { PATHS } from '../../src/api/endpoints.js';
import { ConfigError } from '../../src/errors.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { profileName } from '../../src/simulator/data/connector-history.js';
import type { ActionRow, ConnectorRow } from '../../src/simulator/data/types.js';
import { waitFor } from '../helpers/wait.js';
import { fetchToken, get, sim } from './helpers.js';

const CONNECTOR = PATHS.connector()[0] as string;

interface Page<T> {
  content: T[];
  pageable: { pageNumber: number; pageSize: number; offset: number; sort: { sorted: boolean } };
  last: boolean;
  first: boolean;
  totalPages: number;
  totalElements: number;
  numberOfElements: number;
  size: number;
  number: number;
  empty: boolean;
}

async function page(s: SimulatorServer, token: string, query: string): Promise<Page<ConnectorRow>> {
  const a = await get(s, `${CONNECTOR}?${query}`, token);
  expect(a.status, a.text).toBe(200);
  return a.body as Page<ConnectorRow>;
}

/** Follow pages until `last`, as the client does; bounded so a bug cannot loop forever. */
async function walk(s: SimulatorServer, token: string, query: string): Promise<Array<Page<ConnectorRow>>> {
  const pages: Array<Page<ConnectorRow>> = [];
  for (let n = 0; n < 1000; n++) {
    const p = await page(s, token, `page=${n}&${query}`);
    pages.push(p);
    if (p.last) break;
  }
  return pages;
}

const runKey = (r: ConnectorRow) => JSON.stringify([r.bridge_name, r.profile, r._time]);

describe('connector history paging', () => {
  it('walks to `last`; the pages together are the whole history, each run once', async () => {
    const s = await sim({ size: { connectors: 60, profilesPerConnector: 2, runsPerConnector: 4 } });
    const token = await fetchToken(s);
    const pages = await walk(s, token, 'size=7');
    const rows = pages.flatMap((p) => p.content);
    const total = s.dataset.history.size;
    expect(pages.length).toBe(Math.ceil(total / 7));
    expect(rows.length).toBe(total);
    expect(new Set(rows.map(runKey)).size).toBe(total);
    expect(new Set(rows.map(runKey))).toEqual(new Set(s.dataset.history.all().map(runKey)));
    pages.forEach((p, i) => {
      expect(p).toMatchObject({ number: i, size: 7, first: i === 0, last: i === pages.length - 1, totalElements: total });
      expect(p.pageable).toMatchObject({ pageNumber: i, pageSize: 7, offset: i * 7 });
      expect(p.numberOfElements).toBe(p.content.length);
    });
  });

  it('uses a page size of 20 by default, or the connectorPageSize option', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const p = await page(s, token, '');
    expect(p.content).toHaveLength(20);
    expect(p.pageable.pageSize).toBe(20);
    const other = await sim({ connectorPageSize: 9 });
    expect((await page(other, await fetchToken(other), '')).content).toHaveLength(9);
  });

  it('caps the page size at 20000 (pages of ~25 MB, like the real service)', async () => {
    const s = await sim({ size: { connectors: 1000, profilesPerConnector: 2, runsPerConnector: 12 } });
    const token = await fetchToken(s);
    const p = await page(s, token, 'size=99999');
    expect(p.size).toBe(20000);
    expect(p.content).toHaveLength(20000);
    expect(p.last).toBe(false);
  });

  it('answers an empty last page beyond the end', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const p = await page(s, token, 'page=99');
    expect(p).toMatchObject({ content: [], empty: true, last: true, numberOfElements: 0 });
  });

  it.each(['page=-1', 'page=x', 'size=0', 'size=ten', 'sort=nope%2Casc', 'sort=display_name%2Cup'])('answers 400 to %s', async (query) => {
    const s = await sim();
    const token = await fetchToken(s);
    expect((await get(s, `${CONNECTOR}?${query}`, token)).status).toBe(400);
  });

  it('serves runs in no particular order: not grouped, newest not first, a newest run on a later page than an older one', async () => {
    const s = await sim();
    const rows = s.dataset.history.all();
    const times = rows.map((r) => r._time);
    expect(times).not.toEqual([...times].sort((a, b) => b - a));
    const indexes = new Map<string, number[]>();
    rows.forEach((r, i) => indexes.set(`${r.bridge_name}|${profileName(r)}`, [...(indexes.get(`${r.bridge_name}|${profileName(r)}`) ?? []), i]));
    const newestOnLaterPage = [...indexes.values()].some((list) => {
      const newest = list.reduce((a, b) => ((rows[a] as ConnectorRow)._time > (rows[b] as ConnectorRow)._time ? a : b));
      return list.some((i) => Math.floor(i / 20) < Math.floor(newest / 20));
    });
    expect(newestOnLaterPage).toBe(true);
    const contiguous = [...indexes.values()].every((list) => list.every((i, k) => k === 0 || i === (list[k - 1] as number) + 1));
    expect(contiguous).toBe(false);
  });
});

describe('connector sort', () => {
  it.each([
    ['display_name', 'desc'],
    ['display_name', 'asc'],
    ['_time', 'asc'],
    ['status', 'desc'],
  ])('sort=%s%%2C%s orders the whole history across pages', async (field, direction) => {
    const s = await sim({ size: { connectors: 30 } });
    const token = await fetchToken(s);
    const pages = await walk(s, token, `size=13&sort=${field}%2C${direction}`);
    expect(pages[0]?.pageable.sort.sorted).toBe(true);
    const values = pages.flatMap((p) => p.content).map((r) => r[field as keyof ConnectorRow] as string | number);
    const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(values).toEqual(direction === 'asc' ? sorted : sorted.reverse());
    expect(values.length).toBe(s.dataset.history.size);
  });

  it('keeps served order without sort, and says unsorted', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    const p = await page(s, token, 'size=5');
    expect(p.pageable.sort.sorted).toBe(false);
    expect(p.content.map(runKey)).toEqual(s.dataset.history.all().slice(0, 5).map(runKey));
  });
});

describe('Action paging', () => {
  it('pages Actions with page/size (default 20) until last', async () => {
    const s = await sim({ size: { actions: 45 } });
    const token = await fetchToken(s);
    const first = (await get(s, PATHS.actions()[0] as string, token)).body as { actions: ActionRow[]; totalPages: number; last: boolean };
    expect(first.actions).toHaveLength(20);
    expect(first).toMatchObject({ totalPages: 3, last: false });
    const ids: unknown[] = [];
    for (let n = 0; n < 100; n++) {
      const p = (await get(s, `${PATHS.actions()[1]}?page=${n}&size=8`, token)).body as { actions: ActionRow[]; last: boolean; numberOfElements: number };
      expect(p.numberOfElements).toBe(p.actions.length);
      ids.push(...p.actions.map((a) => a.actionId));
      if (p.last) break;
    }
    expect(ids).toHaveLength(45);
    expect(new Set(ids).size).toBe(45);
  });
});

describe('connector pace (issue 21)', () => {
  it('answers a connector page after the time its rows take, and writes runs during the read', async () => {
    const s = await sim({ connectorPace: { msPerRow: 20, insertsPerPage: 1 } });
    const token = await fetchToken(s);
    const before = s.state().counts.connectorRuns;
    const newest = Math.max(...s.dataset.history.all().map((r) => r._time));
    const t0 = Date.now();
    const p = await page(s, token, 'size=25&sort=_time,desc');
    expect(p.content).toHaveLength(25);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(490);
    // A run of every profile of one connector, newer than anything before.
    expect(Math.max(...s.dataset.history.all().map((r) => r._time))).toBeGreaterThan(newest);
    expect(s.state().counts.connectorRuns).toBeGreaterThanOrEqual(before);
  });

  it('holds a page of more rows than holdAboveRows, and answers one of fewer at once', async () => {
    const s = await sim({ connectorPace: { holdAboveRows: 30 } });
    const token = await fetchToken(s);
    expect((await page(s, token, 'size=30&sort=_time,desc')).content).toHaveLength(30);
    const held = page(s, token, 'size=31&sort=_time,desc');
    let answered = false;
    void held.then(() => (answered = true), () => (answered = true));
    await waitFor('the page of 31 rows arrived', () => s.requests().filter((r) => r.endpoint === 'connector').length >= 2);
    // A page of fewer rows asked after it is answered at once: the held one is still held past it.
    expect((await page(s, token, 'size=30&sort=_time,desc')).content).toHaveLength(30);
    expect(answered).toBe(false);
    expect(() => s.setConnectorPace({ holdAboveRows: -1 })).toThrow(ConfigError);
  });
});
