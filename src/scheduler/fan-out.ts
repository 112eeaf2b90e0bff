/**
 * Fetches one response per id (Action jobs per Action, change history per tracked name) with a
 * per-id cache: only the ids that are due are fetched, a failed id keeps its last good value until
 * it is older than the stale limit, and ids no longer listed are forgotten.
 */
import { CmdbAbortedError } from '../errors.js';

export interface Cached<T> {
  readonly value: T;
  /** Unix seconds of the last successful fetch. */
  readonly fetchedAt: number;
  /** Set when the latest fetch failed. */
  readonly failed?: boolean;
}

export interface FanOutOptions<T> {
  readonly ids: readonly string[];
  readonly cache: Map<string, Cached<T>>;
  readonly due: (id: string, cached: Cached<T> | undefined) => boolean;
  readonly fetch: (id: string) => Promise<T>;
  readonly concurrency: number;
  /**
   * Called before each fetch; false stops the fan-out there (the ids not fetched stay due for the
   * next call). Default: no pacing.
   */
  readonly pace?: () => Promise<boolean>;
  readonly staleAfterSeconds: number;
  /** Unix seconds. */
  readonly now: () => number;
}

export interface FanOutResult<T> {
  /** Current values, in the order of `ids`. */
  readonly values: ReadonlyArray<{ readonly id: string; readonly value: T }>;
  readonly fetched: number;
  /** Ids that were due but not fetched because `pace` stopped the fan-out. */
  readonly left: number;
  /** The first failure, if any id failed. */
  readonly error?: unknown;
}

export async function fanOut<T>(opts: FanOutOptions<T>): Promise<FanOutResult<T>> {
  const ids = [...new Set(opts.ids)];
  const listed = new Set(ids);
  for (const id of opts.cache.keys()) if (!listed.has(id)) opts.cache.delete(id);

  const queue = ids.filter((id) => opts.due(id, opts.cache.get(id)));
  let error: unknown;
  let aborted: unknown;
  let stopped = false;
  let fetched = 0;
  const worker = async () => {
    for (let id = queue.shift(); id !== undefined && !aborted; id = queue.shift()) {
      if (stopped || (opts.pace && !(await opts.pace().catch((err: unknown) => ((aborted = err), false))))) {
        stopped = true;
        queue.unshift(id);
        return;
      }
      fetched++;
      try {
        const value = await opts.fetch(id);
        opts.cache.set(id, { value, fetchedAt: opts.now() });
      } catch (err) {
        if (err instanceof CmdbAbortedError) aborted = err;
        error ??= err;
        const cached = opts.cache.get(id);
        if (cached) opts.cache.set(id, { ...cached, failed: true });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, queue.length)) }, worker));
  if (aborted) throw aborted;
  const left = queue.length;

  const now = opts.now();
  const values: Array<{ id: string; value: T }> = [];
  for (const id of ids) {
    const cached = opts.cache.get(id);
    if (!cached) continue;
    if (cached.failed && now - cached.fetchedAt > opts.staleAfterSeconds) continue;
    values.push({ id, value: cached.value });
  }
  return error === undefined ? { values, fetched, left } : { values, fetched, left, error };
}
