/**
 * The reader of the saved inventory queries: the field metadata a query is checked against, and
 * the count of a query, asked through one narrow request function (`Send`: today
 * CmdbClient.send, on the stack's token, budget and retries). A count is one request for
 * `totalRecords`: a page past the end with one record per page, which carries the count and no
 * record; where the service refuses that page (400, 404, 416, 422, or an answer without a whole
 * count) page 0 is asked instead, from then on. The records themselves are never read or kept: the
 * count's schema strips them.
 */
import { pathsOf, type ResourceRequest } from '../api/endpoints.js';
import { COUNT_PAGE, countRequestBody, type QueryTable, type SentCriterion } from '../api/query.js';
import { FieldMetadataListSchema, QueryCountSchema, type FieldMetadata } from '../api/schemas.js';
import { CmdbHttpError, CmdbInvalidBodyError } from '../errors.js';

/** The one function the reader needs of the client. */
export type Send = <T>(request: ResourceRequest<T>, signal?: AbortSignal) => Promise<T>;

/** Answers to a page past the end that may only mean the service does not serve such a page. */
const PAST_END_REFUSALS: ReadonlySet<number> = new Set([400, 404, 416, 422]);

function refusesPastEnd(err: unknown): boolean {
  if (err instanceof CmdbHttpError) return PAST_END_REFUSALS.has(err.status);
  return err instanceof CmdbInvalidBodyError && !err.notJson;
}

export class QueryReader {
  /** The service answered a page past the end with no count while page 0 worked: page 0 from then on. */
  private firstPageOnly = false;

  constructor(
    private readonly send: Send,
    /** Told once when counting moves to page 0 (the page past the end is not served). */
    private readonly onFirstPageOnly: () => void = () => {},
  ) {}

  /** How counts are asked now (the status page). */
  get countPage(): 'past-end' | 'first' {
    return this.firstPageOnly ? 'first' : 'past-end';
  }

  /** The queryable fields of `table` (GET /CMDB/v2/data/metadata/<table>). */
  async fields(table: QueryTable, signal?: AbortSignal): Promise<FieldMetadata[]> {
    const [path = ''] = pathsOf('data_metadata', table);
    const answer = await this.send({ endpoint: 'data_metadata', method: 'GET', path, schema: FieldMetadataListSchema }, signal);
    return answer.metadata;
  }

  /** totalRecords of `query` over `table` (POST /CMDB/v2/data/cmdb): one request, two only where a page past the end is refused. */
  async count(table: QueryTable, query: ReadonlyArray<ReadonlyArray<SentCriterion>>, signal?: AbortSignal): Promise<number> {
    if (this.firstPageOnly) return this.countAt(table, query, 0, signal);
    try {
      return await this.countAt(table, query, COUNT_PAGE, signal);
    } catch (err) {
      if (!refusesPastEnd(err)) throw err;
      // Page 0 decides whose fault it was: if it fails too, the query is (and the page past the end stays).
      const count = await this.countAt(table, query, 0, signal);
      this.firstPageOnly = true;
      this.onFirstPageOnly();
      return count;
    }
  }

  private async countAt(table: QueryTable, query: ReadonlyArray<ReadonlyArray<SentCriterion>>, page: number, signal?: AbortSignal): Promise<number> {
    const [path = ''] = pathsOf('data_query');
    const body = countRequestBody(table, query, page);
    const answer = await this.send({ endpoint: 'data_query', method: 'POST', path, body, schema: QueryCountSchema }, signal);
    return answer.totalRecords;
  }
}
