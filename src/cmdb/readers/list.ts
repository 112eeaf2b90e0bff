/**
 * The reader of a paged list (the Action list): every page through the one paging loop (pages.ts),
 * each validated with the endpoint's schema, stopped at paging.maxPages with a warning.
 */
import { descriptor, type PageFields, type PagedEndpoint, type ResultOf } from '../../api/endpoints.js';
import type { RequestContext } from '../../api/request-context.js';
import type { Instruments } from '../../metrics/instruments.js';
import type { Logger } from '../../logger.js';
import type { z } from 'zod';
import { jsonDecoder } from '../body.js';
import type { CmdbClient } from '../client.js';
import { pageQuery, walkPages } from './pages.js';

export interface ListReading {
  readonly client: CmdbClient;
  readonly instruments: Instruments;
  readonly logger: Logger;
}

/** A paged read stopped at paging.maxPages while the service had more: logged and counted. */
export function reportTruncated(r: ListReading, endpoint: PagedEndpoint, rows: number): void {
  r.logger.warn({ endpoint, maxPages: r.client.settings.paging.maxPages, rows }, 'paged read stopped at paging.maxPages before the last page');
  r.instruments.pagesTruncated.inc({ stack: r.client.settings.name, endpoint });
}

export async function readList<E extends PagedEndpoint>(r: ListReading, endpoint: E, ctx: RequestContext): Promise<ResultOf<E>> {
  const { client } = r;
  const d = descriptor(endpoint);
  const { maxPages } = client.settings.paging;
  const size = client.settings.paging[d.pageSize];
  const sort = 'sortable' in d && d.sortable ? client.settings.connectorSort : undefined;
  const decode = jsonDecoder(d.schema as z.ZodType<PageFields>);
  const rowsOf = d.rows as (page: PageFields) => unknown[];
  const all: unknown[] = [];
  const walked = await walkPages({
    next: ({ pages }) => ({ page: pages, size }),
    fetch: async (page, asked) => {
      const answer = await client.get({ endpoint, query: pageQuery(page, asked, sort), decode }, ctx);
      if (!answer.found) throw answer.error;
      const rows = rowsOf(answer.value);
      // One push per row: a spread of a very large page could overflow the argument limit.
      for (const row of rows) all.push(row);
      return { count: rows.length, fields: answer.value };
    },
    maxPages,
  });
  if (walked.truncated) reportTruncated(r, endpoint, walked.rows);
  client.events.reads.emit({ endpoint, pages: walked.pages, rows: all.length });
  return all as ResultOf<E>;
}
