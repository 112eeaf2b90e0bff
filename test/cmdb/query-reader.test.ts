/**
 * The query reader (src/cmdb/query-reader.ts) through a scripted `send`: one request per count (a
 * page past the end, one record a page), page 0 only where the service refuses that page, and from
 * then on; the records of an answer are never kept.
 */
import { describe, expect, it } from 'vitest';
import type { ResourceRequest } from '../../src/api/endpoints.js';
import { COUNT_PAGE } from '../../src/api/query.js';
import { QueryReader } from '../../src/cmdb/query-reader.js';
import { CmdbHttpError } from '../../src/errors.js';
import { jsonDecoder } from '../../src/cmdb/body.js';
import { QueryCountSchema, validate } from '../../src/api/schemas.js';

type Body = { paging: { page: number; recordsPerPage: number } };
const QUERY = [[{ searchFieldName: 'EP_Not_Installed', operator: '==', type: 'Binary' as const, value: 'True' }]];

/** A scripted service: `answer(page)` is the JSON body, or a status to fail with. Validated as the client does. */
function service(answer: (page: number) => unknown) {
  const sent: Array<ResourceRequest<unknown> & { body: Body }> = [];
  const send = async <T>(request: ResourceRequest<T>): Promise<T> => {
    sent.push(request as ResourceRequest<unknown> & { body: Body });
    const a = answer((request.body as Body).paging.page);
    if (typeof a === 'number') throw new CmdbHttpError(`${request.method} ${request.path}`, a, 'refused');
    return jsonDecoder(request.schema)({ status: 200, statusText: 'OK', headers: {}, body: Buffer.from(JSON.stringify(a)) } as never, 'POST x');
  };
  return { send, sent };
}

describe('QueryReader.count', () => {
  it('asks one page past the end, one record a page, and reads only totalRecords', async () => {
    const s = service(() => ({ totalRecords: 4211, data: [], totalPages: 4211, recordsPerPage: 1, page: COUNT_PAGE }));
    const reader = new QueryReader(s.send);
    expect(await reader.count('asset', QUERY)).toBe(4211);
    expect(s.sent).toHaveLength(1);
    expect(s.sent[0]).toMatchObject({ endpoint: 'data_query', method: 'POST', path: '/CMDB/v2/data/cmdb' });
    expect(s.sent[0]?.body).toEqual({ table: 'asset', query: QUERY, paging: { page: COUNT_PAGE, recordsPerPage: 1 } });
  });

  it('keeps no record of the answer: the count\'s schema strips them', () => {
    expect(validate(QueryCountSchema, { totalRecords: 2, data: [{ Asset_Name: 'a', Owner_Email: 'x@example.com' }], page: 0 })).toEqual({ ok: true, value: { totalRecords: 2 } });
    expect(validate(QueryCountSchema, { totalRecords: '2' })).toEqual({ ok: true, value: { totalRecords: 2 } });
    expect(validate(QueryCountSchema, { totalRecords: 2.5 }).ok).toBe(false);
  });

  it.each([400, 404, 416, 422])('falls back to page 0 on a %i for the page past the end, and stays there', async (status) => {
    const s = service((page) => (page === COUNT_PAGE ? status : { totalRecords: 17, data: [{}], page: 0 }));
    let told = 0;
    const reader = new QueryReader(s.send, () => told++);
    expect(await reader.count('asset', QUERY)).toBe(17);
    expect(await reader.count('user', QUERY)).toBe(17);
    expect(s.sent.map((r) => r.body.paging.page)).toEqual([COUNT_PAGE, 0, 0]);
    expect(told).toBe(1);
    expect(reader.countPage).toBe('first');
  });

  it('falls back to page 0 when the page past the end has no whole count', async () => {
    const s = service((page) => (page === COUNT_PAGE ? { data: [] } : { totalRecords: 3 }));
    expect(await new QueryReader(s.send).count('asset', QUERY)).toBe(3);
  });

  it('a query the service refuses on page 0 too is the query\'s fault: the page past the end stays', async () => {
    const s = service(() => 400);
    const reader = new QueryReader(s.send);
    await expect(reader.count('asset', QUERY)).rejects.toMatchObject({ status: 400 });
    expect(reader.countPage).toBe('past-end');
  });

  it('a 503 is not a refusal of the page: no second request', async () => {
    const s = service(() => 503);
    await expect(new QueryReader(s.send).count('asset', QUERY)).rejects.toMatchObject({ status: 503 });
    expect(s.sent).toHaveLength(1);
  });
});

describe('QueryReader.fields', () => {
  it('reads the metadata of the table', async () => {
    const sent: unknown[] = [];
    const reader = new QueryReader(async <T>(request: ResourceRequest<T>) => {
      sent.push(request);
      return { metadata: [{ fieldName: 'Asset_Type', dataType: 'String' }] } as T;
    });
    expect(await reader.fields('user')).toEqual([{ fieldName: 'Asset_Type', dataType: 'String' }]);
    expect(sent).toEqual([expect.objectContaining({ endpoint: 'data_metadata', method: 'GET', path: '/CMDB/v2/data/metadata/user' })]);
  });
});
