/**
 * The saved queries' reader (src/cmdb/readers/queries.ts) on a stack's real road, against a scripted
 * loopback service: one request per count (a page past the end, one record a page), page 0 only
 * where the service refuses that page, and from then on; the records of an answer are never kept;
 * the field metadata read as the descriptor says.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { COUNT_PAGE } from '../../src/api/query.js';
import { QueryCountSchema, validate } from '../../src/api/schemas.js';
import { CmdbAbortedError, CmdbHttpError } from '../../src/errors.js';
import { makeClient, rejection } from './helpers/client.js';
import { sendJson, startLocal, type LocalServer } from './helpers/server.js';
import { testStack } from './helpers/stack.js';

const TOKEN_AUTH = { kind: 'token', token: 'pre-issued-token-1' } as const;
const QUERY = [[{ searchFieldName: 'EP_Not_Installed', operator: '==', type: 'Binary' as const, value: 'True' }]];
type Body = { table: string; query: unknown; paging: { page: number; recordsPerPage: number } };

const servers: LocalServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A scripted service: `answer(page)` is the JSON body of a count, or a status to refuse it with. */
async function service(answer: (page: number) => unknown) {
  const s = await startLocal((req, res, body) => {
    if (req.method !== 'POST') return sendJson(res, 200, { metadata: [{ fieldName: 'Asset_Type', dataType: 'String' }] });
    const a = answer((JSON.parse(body) as Body).paging.page);
    if (typeof a === 'number') sendJson(res, a, { message: 'refused' });
    else sendJson(res, 200, a);
  });
  servers.push(s);
  const road = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, retries: { max: 0 } }));
  const bodies = () => s.seen.filter((r) => r.method === 'POST').map((r) => JSON.parse(r.body) as Body);
  return { s, reader: road.client.queries, metrics: road.metrics, log: road.log, bodies };
}

describe('QueryReader.count: every further request waits for the caller\'s pace (ctx.beforeRetry)', () => {
  it('waits before each retry of a 503 and before page 0, never before the first request', async () => {
    let calls = 0;
    const s = await startLocal((req, res, body) => {
      const page = (JSON.parse(body) as Body).paging.page;
      calls++;
      // Two 503s, then a refused page past the end, then page 0.
      if (calls <= 2) sendJson(res, 503, { message: 'Service Unavailable' });
      else if (page === COUNT_PAGE) sendJson(res, 404, { message: 'refused' });
      else sendJson(res, 200, { totalRecords: 5, data: [{}], page: 0 });
    });
    servers.push(s);
    const { client } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, retries: { max: 3, minDelaySeconds: 0, maxDelaySeconds: 0 } }));
    const order: string[] = [];
    const seenBefore = () => s.seen.length;
    const beforeRetry = async () => void order.push(`wait after ${seenBefore()}`);
    expect(await client.queries.count('asset', QUERY, { beforeRetry })).toBe(5);
    expect(s.seen).toHaveLength(4);
    expect(order).toEqual(['wait after 1', 'wait after 2', 'wait after 3']);
  });

  it('a wait that rejects ends the count with its error: nothing more is sent', async () => {
    const s = await startLocal((_req, res) => sendJson(res, 503, { message: 'Service Unavailable' }));
    servers.push(s);
    const { client } = makeClient(testStack({ baseUrl: s.url, auth: TOKEN_AUTH, retries: { max: 3, minDelaySeconds: 0, maxDelaySeconds: 0 } }));
    const err = await rejection(client.queries.count('asset', QUERY, { beforeRetry: () => Promise.reject(new CmdbAbortedError('pacing')) }));
    expect(err).toBeInstanceOf(CmdbAbortedError);
    expect(s.seen).toHaveLength(1);
  });
});

describe('QueryReader.count', () => {
  it('POSTs one page past the end, one record a page, and reads only totalRecords', async () => {
    const { s, reader, metrics, bodies } = await service(() => ({ totalRecords: 4211, data: [], totalPages: 4211, recordsPerPage: 1, page: COUNT_PAGE }));
    expect(await reader.count('asset', QUERY)).toBe(4211);
    expect(s.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /CMDB/v2/data/cmdb']);
    expect(s.seen[0]?.headers['content-type']).toBe('application/json');
    expect(s.seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN_AUTH.token}`);
    expect(bodies()).toEqual([{ table: 'asset', query: QUERY, paging: { page: COUNT_PAGE, recordsPerPage: 1 } }]);
    // Counted under its endpoint like every request of the road.
    expect(await metrics.outcomes('data_query')).toEqual({ '200': 1 });
  });

  it('keeps no record of the answer: the count\'s schema strips them', () => {
    expect(validate(QueryCountSchema, { totalRecords: 2, data: [{ Asset_Name: 'a', Owner_Email: 'x@example.com' }], page: 0 })).toEqual({ ok: true, value: { totalRecords: 2 } });
    expect(validate(QueryCountSchema, { totalRecords: '2' })).toEqual({ ok: true, value: { totalRecords: 2 } });
    expect(validate(QueryCountSchema, { totalRecords: 2.5 }).ok).toBe(false);
  });

  it.each([400, 404, 416, 422])('falls back to page 0 on a %i for the page past the end, and stays there', async (status) => {
    const { reader, bodies, log } = await service((page) => (page === COUNT_PAGE ? status : { totalRecords: 17, data: [{}], page: 0 }));
    expect(await reader.count('asset', QUERY)).toBe(17);
    expect(await reader.count('user', QUERY)).toBe(17);
    expect(bodies().map((b) => b.paging.page)).toEqual([COUNT_PAGE, 0, 0]);
    expect(log.lines().filter((l) => String(l.msg).includes('page past the end'))).toHaveLength(1);
    expect(reader.countPage).toBe('first');
  });

  it('falls back to page 0 when the page past the end has no whole count', async () => {
    const { reader } = await service((page) => (page === COUNT_PAGE ? { data: [] } : { totalRecords: 3 }));
    expect(await reader.count('asset', QUERY)).toBe(3);
  });

  it('a query the service refuses on page 0 too is the query\'s fault: the page past the end stays', async () => {
    const { reader } = await service(() => 400);
    const err = await rejection(reader.count('asset', QUERY));
    expect(err).toBeInstanceOf(CmdbHttpError);
    expect(err).toMatchObject({ status: 400 });
    expect(err.message).toContain('POST /CMDB/v2/data/cmdb');
    expect(reader.countPage).toBe('past-end');
  });

  it('a 503 is not a refusal of the page: no second request', async () => {
    const { reader, bodies } = await service(() => 503);
    await expect(reader.count('asset', QUERY)).rejects.toMatchObject({ status: 503 });
    expect(bodies()).toHaveLength(1);
  });
});

describe('QueryReader.fields', () => {
  it('reads the metadata of the table with one GET', async () => {
    const { s, reader } = await service(() => 0);
    expect(await reader.fields('user')).toEqual([{ fieldName: 'Asset_Type', dataType: 'String' }]);
    expect(s.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /CMDB/v2/data/metadata/user']);
  });
});
