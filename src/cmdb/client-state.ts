/**
 * What a restart keeps of a stack's client (--storage.path), in a small versioned form of its own:
 * the path spellings that answered, what the poll plan saw, and the pauses still running (the
 * stack's and each group's). Never the token: a restarted exporter fetches a new one.
 * CmdbClient.exportState makes it; clientStateFrom reads it back for the stack as configured now.
 */
import { z } from 'zod';
import { DATA_ENDPOINTS, GROUP_NAMES, pathsOf, type DataEndpoint } from '../api/endpoints.js';
import type { Pause } from './pauses.js';
import type { PlanSeen } from './plan.js';

/** 2: the pauses of every scope (1 kept the stack's end time only). */
export const CLIENT_STATE_VERSION = 2;

export interface ClientState {
  readonly v: typeof CLIENT_STATE_VERSION;
  readonly spellings: ReadonlyArray<readonly [DataEndpoint, string]>;
  readonly seen: PlanSeen;
  /** The pauses in force when it was written (until: ms since the epoch). */
  readonly pauses: readonly Pause[];
}

/** What of a client's state holds under the stack as configured now. */
export type RestoredClient = Omit<ClientState, 'v' | 'spellings'> & { readonly spellings: Map<DataEndpoint, string> };

const count = z.number().finite().min(0);
const endpointName = z.enum(['access_token', ...DATA_ENDPOINTS] as [string, ...string[]]);

const PauseSchema = z.object({
  scope: z.enum(['stack', 'group']),
  group: z.enum(['token', ...GROUP_NAMES]).optional(),
  until: z.number().finite(),
  status: z.number().int().optional(),
  endpoint: endpointName,
  // The method and path only (`GET /CMDB/…`): never a query, never a host.
  request: z.string().max(300),
});

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
  pauses: z.array(PauseSchema),
});

/** What of `state` holds: spellings the endpoints still have, the plan's figures, the pauses. Undefined when invalid. */
export function clientStateFrom(state: unknown): RestoredClient | undefined {
  const parsed = ClientStateSchema.safeParse(state);
  if (!parsed.success) return undefined;
  const spellings = new Map(parsed.data.spellings.filter(([endpoint, path]) => pathsOf(endpoint).includes(path)));
  return { spellings, seen: parsed.data.seen as PlanSeen, pauses: parsed.data.pauses as Pause[] };
}
