/**
 * The reader of every endpoint that answers one record or one list per request (inventory counts,
 * license, the ingestion run list, its next run and a run's detail, an Action's jobs, a name's
 * change history): what the endpoint's descriptor says, no more. The id goes where the descriptor
 * puts it; a 404 is an empty list where the descriptor says so (no jobs, no change log), else an error.
 */
import { descriptor, type ResultOf, type SingleEndpoint } from '../../api/endpoints.js';
import type { RequestContext } from '../../api/request-context.js';
import type { z } from 'zod';
import { jsonDecoder } from '../body.js';
import type { CmdbClient } from '../client.js';

export async function readRecord<E extends SingleEndpoint>(client: CmdbClient, endpoint: E, id: string | undefined, ctx: RequestContext, query?: string): Promise<ResultOf<E>> {
  const d = descriptor(endpoint);
  const schema = d.schema as z.ZodType<unknown>;
  const extract = d.extract as (body: unknown) => ResultOf<E>;
  const answer = await client.get({ endpoint, ...(id === undefined ? {} : { id }), ...(query === undefined ? {} : { query }), decode: jsonDecoder(schema) }, ctx);
  if (answer.found) return extract(answer.value);
  if ('notFoundIsEmpty' in d && d.notFoundIsEmpty) return [] as ResultOf<E>;
  throw answer.error;
}
