/**
 * The `changes` group: the change history of the configured asset and user names, each name one
 * request. The last good history per name is this poller's state (fan-out cache), served for a
 * name whose request fails until it is older than the stale limit, and kept across a restart.
 */
import type { ChangeEntry } from '../api/schemas.js';
import { fanOut, type Cached } from './fan-out.js';
import type { GroupPoller, PollContext, PollerParts } from './mapping.js';
import type { PollerState } from './poller-state.js';
import { wellFormedIds } from './well-formed.js';

type ChangeEndpoint = 'asset_change' | 'user_change';
const ENDPOINTS: readonly ChangeEndpoint[] = ['asset_change', 'user_change'];

export class ChangePoller implements GroupPoller {
  private readonly log: Record<ChangeEndpoint, Map<string, Cached<ChangeEntry[]>>> = { asset_change: new Map(), user_change: new Map() };

  constructor(private readonly parts: PollerParts) {}

  /**
   * Both endpoints at once: neither waits on the other, so one that the CMDB keeps refusing (a 429
   * each time, which may hold it until the poll's deadline) does not take the other down with it.
   */
  async poll(ctx: PollContext): Promise<void> {
    await Promise.all(ENDPOINTS.map((endpoint) => this.pollNames(endpoint, ctx)));
  }

  /** Its part of the poller's state (--storage.path). */
  exportState(): Pick<PollerState, 'changes'> {
    return { changes: { asset_change: [...this.log.asset_change], user_change: [...this.log.user_change] } };
  }

  restore(state: PollerState): void {
    for (const endpoint of ENDPOINTS) for (const [id, entry] of state.changes[endpoint]) this.log[endpoint].set(id, entry);
  }

  private async pollNames(endpoint: ChangeEndpoint, ctx: PollContext): Promise<void> {
    const { api, runner, mapper, logger, now } = this.parts;
    const stack = this.parts.stack();
    const names = endpoint === 'asset_change' ? stack.track.assets : stack.track.users;
    await runner.run(
      endpoint,
      async () => {
        const result = await fanOut<ChangeEntry[]>({
          ids: wellFormedIds(names, endpoint, logger),
          cache: this.log[endpoint],
          due: () => true,
          fetch: (id) => api.get(endpoint, id, ctx),
          concurrency: stack.maxConcurrency,
          staleAfterSeconds: stack.intervals.changes * stack.staleIntervals,
          now,
        });
        return mapper.partial(endpoint, result.values, result.error);
      },
      ctx.signal,
    );
  }
}
