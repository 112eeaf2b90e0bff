/**
 * What a restart keeps of a stack's poller (--storage.path), in a small versioned form of its own:
 * which Action's jobs were read when (the Action jobs cache, with the Actions' last runs), the last
 * good change history per tracked name, which ingestion run's detail was read, and the states the
 * state-set collectors remember. StackPoller.exportState makes it; pollerStateFrom reads it back.
 * Only fields the schemas keep are in it: no status message, docker command or changed value.
 */
import { z } from 'zod';
import { ActionJobSchema, ChangeEntrySchema, type ActionJob, type ChangeEntry } from '../api/schemas.js';
import type { StateMemoryState } from '../collectors/state-memory.js';
import type { Cached } from './fan-out.js';

export const POLLER_STATE_VERSION = 1;

export interface JobsCacheEntry {
  readonly jobs: ActionJob[];
  readonly lastRunAt: unknown;
  /** When the slow refresh is due (unix seconds). */
  readonly refreshAt: number;
  /** The newest job was still running: fetched once more at this time (unix seconds). */
  readonly recheckAt?: number;
}

export interface PollerState {
  readonly v: typeof POLLER_STATE_VERSION;
  /** The Action list as the job polls need it: each Action's id and last run. */
  readonly actions?: ReadonlyArray<{ readonly actionId: string; readonly lastRunAt?: unknown }>;
  readonly jobs: ReadonlyArray<readonly [string, Cached<JobsCacheEntry>]>;
  readonly changes: {
    readonly asset_change: ReadonlyArray<readonly [string, Cached<ChangeEntry[]>]>;
    readonly user_change: ReadonlyArray<readonly [string, Cached<ChangeEntry[]>]>;
  };
  readonly detailOf?: { readonly runId: string; readonly status: string };
  readonly states: StateMemoryState;
}

const time = z.number().finite();
const runAt = z.union([z.string(), z.number(), z.null()]).optional();
const cached = <T extends z.ZodType>(value: T) => z.tuple([z.string(), z.object({ value, fetchedAt: time, failed: z.boolean().optional() })]);

const PollerStateSchema = z.object({
  v: z.literal(POLLER_STATE_VERSION),
  actions: z.array(z.object({ actionId: z.string(), lastRunAt: runAt })).optional(),
  jobs: z.array(cached(z.object({ jobs: z.array(ActionJobSchema), lastRunAt: runAt, refreshAt: time, recheckAt: time.optional() }))),
  changes: z.object({ asset_change: z.array(cached(z.array(ChangeEntrySchema))), user_change: z.array(cached(z.array(ChangeEntrySchema))) }),
  detailOf: z.object({ runId: z.string(), status: z.string() }).optional(),
  states: z.unknown(),
});

/**
 * `state` validated, or undefined. `refreshAll`: the state is older than the restore bound, so every
 * Action's jobs are due at the first job poll (the cached ones are still served until then) and
 * the newest ingestion run's detail is read again.
 */
export function pollerStateFrom(state: unknown, refreshAll: boolean): PollerState | undefined {
  const parsed = PollerStateSchema.safeParse(state);
  if (!parsed.success) return undefined;
  const s = parsed.data as unknown as PollerState;
  if (!refreshAll) return s;
  const { detailOf: _read, ...rest } = s;
  return { ...rest, jobs: s.jobs.map(([id, c]) => [id, { ...c, value: { ...c.value, refreshAt: 0 } }] as const) };
}
