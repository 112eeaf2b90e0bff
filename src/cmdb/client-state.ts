/**
 * What a restart keeps of a stack's client (--storage.path), in a small versioned form of its own:
 * the path spellings that answered, what the poll plan saw, and a server pause still running. Never
 * the token: a restarted exporter fetches a new one. CmdbClient.exportState makes it;
 * clientStateFrom reads it back for the stack as configured now.
 */
import { z } from 'zod';
import { DATA_ENDPOINTS, pathsOf, type DataEndpoint } from '../api/endpoints.js';
import type { PlanSeen } from './plan.js';

export const CLIENT_STATE_VERSION = 1;

export interface ClientState {
  readonly v: typeof CLIENT_STATE_VERSION;
  readonly spellings: ReadonlyArray<readonly [DataEndpoint, string]>;
  readonly seen: PlanSeen;
  /** A server Retry-After pause still running (unix seconds). */
  readonly pausedUntil?: number;
}

const count = z.number().finite().min(0);

const ClientStateSchema = z.object({
  v: z.literal(CLIENT_STATE_VERSION),
  spellings: z.array(z.tuple([z.enum(DATA_ENDPOINTS as unknown as [DataEndpoint, ...DataEndpoint[]]), z.string()])),
  seen: z.object({
    connectorPages: z.object({ full: count.optional(), incremental: count.optional() }).optional(),
    actions: count.optional(),
    actionPages: count.optional(),
    actionJobsPerHour: count.optional(),
    ingestionDetailPerHour: count.optional(),
  }),
  pausedUntil: z.number().finite().optional(),
});

/** What of `state` holds: spellings the endpoints still have, the plan's figures, the pause. Undefined when invalid. */
export function clientStateFrom(state: unknown): { spellings: Map<DataEndpoint, string>; seen: PlanSeen; pausedUntil?: number } | undefined {
  const parsed = ClientStateSchema.safeParse(state);
  if (!parsed.success) return undefined;
  const spellings = new Map(parsed.data.spellings.filter(([endpoint, path]) => pathsOf(endpoint).includes(path)));
  return { spellings, seen: parsed.data.seen as PlanSeen, ...(parsed.data.pausedUntil === undefined ? {} : { pausedUntil: parsed.data.pausedUntil }) };
}
