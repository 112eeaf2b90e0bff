/**
 * The `ingestion` group: the run list, the next run, and the task detail of the newest run. The
 * detail is fetched when the newest run's id or status changes, and on every poll while it is
 * running; which run's detail was read (and in what status) is this poller's state, kept across a
 * restart.
 */
import type { IngestionRun } from '../api/schemas.js';
import { detailRun } from '../collectors/index.js';
import type { PollResult } from './endpoint-runner.js';
import type { GroupPoller, PollContext, PollerParts } from './mapping.js';
import { pollOnce } from './once-poller.js';
import type { PollerState } from './poller-state.js';

export class IngestionPoller implements GroupPoller {
  /** The newest run whose detail was read, and its status then. */
  private detailOf: PollerState['detailOf'];

  constructor(private readonly parts: PollerParts) {}

  async poll(ctx: PollContext): Promise<void> {
    const { runner } = this.parts;
    // The run list and the next run at once: one the CMDB keeps refusing does not hold the other.
    const [runs] = await Promise.all([pollOnce(this.parts, 'data_ingestion', ctx), pollOnce(this.parts, 'data_ingestion_next', ctx)]);
    if (!runner.enabled('data_ingestion_detail')) return;
    if (!runs) {
      runner.blocked('data_ingestion_detail', 'the run list (data_ingestion) could not be read');
      return;
    }
    await runner.run('data_ingestion_detail', () => this.detail(runs, ctx), ctx.signal);
  }

  /** Its part of the poller's state (--storage.path). */
  exportState(): Pick<PollerState, 'detailOf'> {
    return this.detailOf ? { detailOf: { ...this.detailOf } } : {};
  }

  restore(state: PollerState): void {
    if (state.detailOf) this.detailOf = { ...state.detailOf };
  }

  private async detail(runs: readonly IngestionRun[], ctx: PollContext): Promise<PollResult> {
    const { api, mapper, stack, logger } = this.parts;
    const target = detailRun(runs, stack().timezone);
    if (!target) {
      this.detailOf = undefined;
      return mapper.map('data_ingestion_detail', null);
    }
    const { run: newest, status, inProgress } = target;
    const known = this.detailOf;
    const same = known !== undefined && known.runId === newest.id && known.status === status;
    if (same && !inProgress) return { kind: 'unchanged' };
    if (!newest.id.isWellFormed()) {
      // No path can carry it; the run's detail is skipped, the rest of the ingestion is unaffected.
      logger.debug({ endpoint: 'data_ingestion_detail' }, 'newest run id is not well-formed text; its detail is skipped');
      return mapper.map('data_ingestion_detail', null);
    }
    const tasks = await api.get('data_ingestion_detail', newest.id, ctx);
    this.detailOf = { runId: newest.id, status };
    return mapper.map('data_ingestion_detail', { id: newest.id, value: tasks });
  }
}
