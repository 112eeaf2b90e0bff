/**
 * What a restart keeps of a stack's endpoint runner (--storage.path), in a small versioned form of
 * its own: each endpoint's state, when it was last polled, its failure count and its 403 back-off.
 * Never an error text (it could quote what the CMDB said): a restored failure reads as restored.
 * EndpointRunner.exportState makes it; runnerStateFrom reads it back.
 */
import { z } from 'zod';
import { DATA_ENDPOINTS, type DataEndpoint } from '../api/endpoints.js';
import type { PollOutcome } from '../errors.js';

export const RUNNER_STATE_VERSION = 1;

/** Where an endpoint stands (EndpointRunner): `forbidden` is a 403, retried on the doubling back-off only (retryAt). */
export type EndpointState = 'pending' | 'ok' | 'failing' | 'forbidden' | 'blocked';

export interface RestoredEndpoint {
  readonly endpoint: DataEndpoint;
  readonly state: EndpointState;
  readonly lastPollAt?: number;
  readonly lastDurationSeconds?: number;
  readonly outcome?: PollOutcome;
  readonly consecutiveFailures: number;
  /** The 403 back-off: not polled before `until` (unix seconds); `backoff` doubles on the next 403. */
  readonly forbidden?: { readonly until: number; readonly backoff: number };
}

export interface RunnerState {
  readonly v: typeof RUNNER_STATE_VERSION;
  readonly endpoints: readonly RestoredEndpoint[];
}

const time = z.number().finite();
const OUTCOME = /^(success|timeout|network|invalid_body|too_large|rate_limited|redirect_refused|rejected|aborted|forbidden|blocked|error|[1-5]\d\d)$/;

const RunnerStateSchema = z.object({
  v: z.literal(RUNNER_STATE_VERSION),
  endpoints: z.array(
    z.object({
      endpoint: z.enum(DATA_ENDPOINTS as unknown as [DataEndpoint, ...DataEndpoint[]]),
      state: z.enum(['pending', 'ok', 'failing', 'forbidden', 'blocked']),
      lastPollAt: time.optional(),
      lastDurationSeconds: time.optional(),
      outcome: z.string().regex(OUTCOME).optional(),
      consecutiveFailures: z.number().int().min(0),
      forbidden: z.object({ until: time, backoff: z.number().finite().positive() }).optional(),
    }),
  ),
});

/** The restored endpoints by name; undefined when `state` is not a valid state of this version. */
export function runnerStateFrom(state: unknown): ReadonlyMap<DataEndpoint, RestoredEndpoint> | undefined {
  const parsed = RunnerStateSchema.safeParse(state);
  if (!parsed.success) return undefined;
  return new Map(parsed.data.endpoints.map((e) => [e.endpoint, e as RestoredEndpoint]));
}
