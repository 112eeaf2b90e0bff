/**
 * The reader of the saved inventory queries: a table's field metadata (GET `…/data/metadata/<table>`,
 * a record like any other) and a query's count (POST `…/data/cmdb`, the query in the body), one
 * request for `totalRecords` on a page past the end, or on page 0 where the service refuses that
 * (docs/queries.md, "Counted, not downloaded"; kept as long as the stack's road).
 */
import type { QueryCounting } from '../../api/endpoints.js';
import { COUNT_PAGE, countRequestBody, type QueryTable, type SentCriterion } from '../../api/query.js';
import type { RequestContext } from '../../api/request-context.js';
import { QueryCountSchema, type FieldMetadata } from '../../api/schemas.js';
import { CmdbHttpError, CmdbInvalidBodyError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { jsonDecoder } from '../body.js';
import type { CmdbClient } from '../client.js';
import { readRecord } from './record.js';

/** Answers to a page past the end that may only mean the service does not serve such a page. */
const PAST_END_REFUSALS: ReadonlySet<number> = new Set([400, 404, 416, 422]);

function refusesPastEnd(err: unknown): boolean {
  if (err instanceof CmdbHttpError) return PAST_END_REFUSALS.has(err.status);
  return err instanceof CmdbInvalidBodyError && !err.notJson;
}

const decodeCount = jsonDecoder(QueryCountSchema);

export class QueryReader implements QueryCounting {
  /** The service answered a page past the end with no count while page 0 worked: page 0 from then on. */
  private firstPageOnly = false;

  constructor(
    private readonly client: CmdbClient,
    /** Already a child bound to { stack }. */
    private readonly logger: Logger,
  ) {}

  /** How counts are asked now (the status page). */
  get countPage(): 'past-end' | 'first' {
    return this.firstPageOnly ? 'first' : 'past-end';
  }

  /** The queryable fields of `table`. */
  fields(table: QueryTable, ctx: RequestContext = {}): Promise<FieldMetadata[]> {
    return readRecord(this.client, 'data_metadata', table, ctx);
  }

  /** totalRecords of `query` over `table`: one request, two only where a page past the end is refused. */
  async count(table: QueryTable, query: ReadonlyArray<ReadonlyArray<SentCriterion>>, ctx: RequestContext = {}): Promise<number> {
    if (this.firstPageOnly) return this.countAt(table, query, 0, ctx);
    try {
      return await this.countAt(table, query, COUNT_PAGE, ctx);
    } catch (err) {
      if (!refusesPastEnd(err)) throw err;
      // Page 0 decides whose fault it was: if it fails too, the query is (and the page past the end stays).
      // A second request of the count: it waits for the caller's pace like a retry.
      if (ctx.beforeRetry !== undefined) await ctx.beforeRetry();
      const count = await this.countAt(table, query, 0, ctx);
      this.firstPageOnly = true;
      this.logger.info({ endpoint: 'data_query' }, 'the CMDB does not answer a count on a page past the end: counts ask for page 0 (one record each) from now on');
      return count;
    }
  }

  private async countAt(table: QueryTable, query: ReadonlyArray<ReadonlyArray<SentCriterion>>, page: number, ctx: RequestContext): Promise<number> {
    const answer = await this.client.post({ endpoint: 'data_query', decode: decodeCount }, countRequestBody(table, query, page), ctx);
    if (!answer.found) throw answer.error;
    return answer.value.totalRecords;
  }
}
