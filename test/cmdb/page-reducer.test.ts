/** Streaming reduction of one connector page: what is kept, what the sort check says, and the worker thread. */
import { afterAll, describe, expect, it } from 'vitest';
import { newestRuns } from '../../src/api/connector-runs.js';
import { ConnectorPageSchema, validate } from '../../src/api/schemas.js';
import { missingFieldCount } from '../../src/collectors/connector-run.js';
import { PageReducer, createScanReducers, reduceConnectorPage, type PageAnswer } from '../../src/cmdb/page-reducer.js';

const rows = [
  { bridge_name: 'a', profile: 'p', _time: 100, status: 'Success', event_messages: ['x'.repeat(50)] },
  { bridge_name: 'a', profile: { profile_name: 'p', config: { secret: 's' } }, _time: 300, status: 'Error' },
  { bridge_name: 'a', profile: 'p', _time: 200, status: 'Warning' },
  { bridge_name: 'b', profile: null, platform: 'ML-ENGINE', _time: 150, end_time: 149 },
  { bridge_name: 'c', profile: 'q', _utc: '2026-07-27T14:00:00Z' },
  { bridge_name: 'c', profile: 'q', _time: 50 },
  { bridge_name: 'd', profile: 'r', _time: 1785164000000 },
];
const page = (content: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ content, totalPages: 3, last: false, ...extra });
const asPage = (r: PageAnswer & { rows?: unknown[] }) => {
  if (r.kind !== 'page') throw new Error(`expected a page, got ${r.kind}`);
  return r;
};

describe('reduceConnectorPage', () => {
  it('keeps the newest row per (bridge_name, profile name) and every row it cannot order by _time', () => {
    const r = asPage(reduceConnectorPage(page(rows)));
    expect(r.count).toBe(7);
    // a: only the _time 300 row; b; c: both (one has _utc only, the main thread orders them); d.
    expect(r.rows).toEqual([rows[1], rows[3], rows[4], rows[5], rows[6]]);
    expect(r.envelope).toEqual({ totalPages: 3, last: false });
  });

  it('gives the same newest runs as reducing the whole page at once', () => {
    const whole = validate(ConnectorPageSchema, JSON.parse(page(rows)));
    const reduced = asPage(reduceConnectorPage(page(rows)));
    const kept = validate(ConnectorPageSchema, { ...reduced.envelope, content: reduced.rows });
    if (!whole.ok || !kept.ok) throw new Error('invalid fixture');
    expect(newestRuns(kept.value.content, 'UTC')).toEqual(newestRuns(whole.value.content, 'UTC'));
  });

  it('says a page is sorted only when every row has a _time and they never increase (ms read as seconds)', () => {
    const desc = [300, 300, 200, 1e12 / 10].map((t, i) => ({ bridge_name: `x${i}`, profile: 'p', _time: t }));
    expect(asPage(reduceConnectorPage(page(desc.slice(0, 3)))).sorted).toBe(true);
    const r = asPage(reduceConnectorPage(page(desc.slice(0, 3))));
    expect([r.first, r.last, r.min]).toEqual([300, 200, 200]);
    expect(asPage(reduceConnectorPage(page([desc[2], desc[0]]))).sorted).toBe(false);
    expect(asPage(reduceConnectorPage(page([...desc.slice(0, 2), { bridge_name: 'y', _utc: '2026-01-01T00:00:00Z' }]))).sorted).toBe(false);
    expect(asPage(reduceConnectorPage(page([{ bridge_name: 'z', _time: 1785164000123 }]))).min).toBeCloseTo(1785164000.123, 3);
    expect(asPage(reduceConnectorPage(page([]))).sorted).toBe(true);
  });

  it('leaves other bodies to the schema and reports text that is not JSON', () => {
    expect(reduceConnectorPage('[{"bridge_name":"a"}]')).toEqual({ kind: 'other', body: [{ bridge_name: 'a' }] });
    expect(reduceConnectorPage('{"data":[]}')).toEqual({ kind: 'other', body: { data: [] } });
    expect(reduceConnectorPage('<html>')).toEqual({ kind: 'not_json' });
    expect(asPage(reduceConnectorPage(`\uFEFF${page([])}`)).count).toBe(0);
  });

  it('keeps memory to the keys: a page of many runs of few keys comes back as few rows', () => {
    const many = Array.from({ length: 5000 }, (_, i) => ({ bridge_name: `k${i % 10}`, profile: 'p', _time: 1_700_000_000 + i, event_messages: [{ WARNING: 'w'.repeat(100) }] }));
    const r = asPage(reduceConnectorPage(page(many)));
    expect(r.count).toBe(5000);
    expect(r.rows).toHaveLength(10);
  });

  it('reduces across the pages of a scan: what comes back is one row per key, the newest of every page', () => {
    const reducers = createScanReducers();
    const runs = Array.from({ length: 600 }, (_, i) => ({ bridge_name: `k${i % 7}`, profile: 'p', _time: 1_700_000_000 + ((i * 37) % 600) }));
    for (let p = 0; p < 6; p++) asPage(reducers.page(9, page(runs.slice(p * 100, (p + 1) * 100))));
    const kept = reducers.finish(9) as Array<{ bridge_name: string; _time: number }>;
    expect(kept).toHaveLength(7);
    for (const k of kept) {
      expect(k._time).toBe(Math.max(...runs.filter((r) => r.bridge_name === k.bridge_name).map((r) => r._time)));
    }
    // A finished scan is forgotten; scans do not mix.
    expect(reducers.finish(9)).toEqual([]);
  });
});

describe('PageReducer worker thread', () => {
  const reducer = new PageReducer(0);
  afterAll(() => reducer.close());

  it('reduces a scan in the worker exactly as inline, with two scans in flight', async () => {
    const bodies = [page(rows), page(rows.slice(2)), page(rows.slice(0, 3))];
    const a = reducer.beginScan();
    const b = reducer.beginScan();
    const answers = await Promise.all([...bodies.map((x) => a.page(Buffer.from(x))), b.page(Buffer.from(page(rows.slice(5))))]);
    const inline = createScanReducers();
    expect(answers.slice(0, 3)).toEqual(bodies.map((x) => inline.page(1, x)));
    expect(await a.finish()).toEqual(inline.finish(1));
    expect(await b.finish()).toEqual([rows[5], rows[6]]);
  });

  it('answers not_json and other bodies from the worker too', async () => {
    const s = reducer.beginScan();
    expect(await s.page(Buffer.from('<html>'))).toEqual({ kind: 'not_json' });
    expect(await s.page(Buffer.from('[1,2]'))).toEqual({ kind: 'other', body: [1, 2] });
    s.drop();
  });

  it('hands back a row whose field lists nest 100,000 deep, capped, and keeps its other runs (issue 11 #7)', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    for (const depth of [deep, '['.repeat(5_000) + ']'.repeat(5_000)]) {
      const text = `{"content":[{"bridge_name":"a","profile":"p","_time":100,"expected_input_fields":["x",${depth}],"actual_input_fields":[${depth}]},{"bridge_name":"b","profile":"p","_time":90}],"last":true,"extra":${depth}}`;
      const s = reducer.beginScan();
      const answer = asPage(await s.page(Buffer.from(text)));
      expect(answer.count).toBe(2);
      const kept = (await s.finish()) as Array<Record<string, unknown>>;
      expect(kept.map((r) => r.bridge_name)).toEqual(['a', 'b']);
      expect((kept[0]?.expected_input_fields as unknown[])[0]).toBe('x');
      const valid = validate(ConnectorPageSchema, { ...answer.envelope, content: kept });
      if (!valid.ok) throw new Error(valid.message);
      const [a] = newestRuns(valid.value.content, 'UTC');
      expect(a && missingFieldCount(a)).toBe(1);
    }
  });

  it('reads _time with the shared parseTimestamp, in the worker too: numeric text is a time, so such a page is sorted (issue 20 #4)', async () => {
    const text = page([300, 200, 100].map((t, i) => ({ bridge_name: `s${i}`, profile: 'p', _time: String(1_785_000_000 + t) })));
    const inline = asPage(reduceConnectorPage(text));
    expect([inline.sorted, inline.first, inline.min]).toEqual([true, 1_785_000_300, 1_785_000_100]);
    const s = reducer.beginScan();
    const answer = asPage(await s.page(Buffer.from(text)));
    expect([answer.sorted, answer.first, answer.min]).toEqual([true, 1_785_000_300, 1_785_000_100]);
    s.drop();
  });

  it('hands a whole buffer over without copying it', async () => {
    const body = Buffer.from(page(rows));
    const owned = Buffer.alloc(body.length);
    body.copy(owned);
    const s = reducer.beginScan();
    expect(asPage(await s.page(owned)).count).toBe(7);
    // Transferred: the sender's view is detached.
    expect(owned.buffer.byteLength).toBe(0);
    expect(await s.finish()).toHaveLength(5);
  });
});
