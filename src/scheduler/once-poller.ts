/**
 * The endpoints asked once per poll whose collector takes the answer as it is: the inventory and
 * license records, the ingestion run list and next run, the Action list. Their poll needs nothing
 * but their descriptor; what a later endpoint needs of the answer (the newest run's detail, each
 * listed Action's jobs) is handed to its poller.
 */
import type { EndpointInputs, ResultOf } from '../api/endpoints.js';
import type { RequestContext } from '../api/request-context.js';
import type { GroupPoller, PollContext, PollerParts } from './mapping.js';

/** Endpoints asked once per poll, whose collector takes the result as it is. */
export type OnceEndpoint = 'metrics_data' | 'license' | 'data_ingestion' | 'data_ingestion_next' | 'actions';

/** Polls `endpoint` once; returns its answer (undefined when it failed or was not asked), after `seen` was told of it. */
export async function pollOnce<E extends OnceEndpoint>(parts: PollerParts, endpoint: E, ctx: PollContext, seen?: (result: ResultOf<E>) => void): Promise<ResultOf<E> | undefined> {
  const { api, runner, mapper } = parts;
  let result: ResultOf<E> | undefined;
  await runner.run(
    endpoint,
    async () => {
      // GetArgs<E> stays unresolved for a generic E; every OnceEndpoint takes no id.
      const get = api.get.bind(api) as (e: E, id: undefined, c?: RequestContext) => Promise<ResultOf<E>>;
      const answer = await get(endpoint, undefined, ctx);
      result = answer;
      seen?.(answer);
      return mapper.map(endpoint, answer as EndpointInputs[E]);
    },
    ctx.signal,
  );
  return result;
}

/** A group of endpoints asked once per poll, one after the other. */
export function oncePoller(parts: PollerParts, endpoints: readonly OnceEndpoint[]): GroupPoller {
  return {
    async poll(ctx) {
      for (const endpoint of endpoints) await pollOnce(parts, endpoint, ctx);
    },
  };
}
