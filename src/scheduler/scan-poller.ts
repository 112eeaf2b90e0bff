/**
 * The poll of an endpoint read as a scan (its descriptor declares `scan`: the connector history).
 * What sets it apart from the endpoints asked once per poll:
 * - a full scan may outlast its interval while its pages keep coming: it is cut off only once it
 *   stops moving (progressDeadline), when its reader tells how it moves;
 * - when the read says nothing changed (an incremental read found nothing newer) and the store
 *   holds the series of an earlier success, they are still current: mapping ~1,000 runs again would
 *   only cost time;
 * - the mapping runs a step of runs at a time, scrapes answered between steps (connectorSteps);
 * - what the history says of the data's rebuilds (its merger rows) is handed on after every read
 *   (`rebuilds`): the saved queries count once per rebuild (query-poller.ts).
 */
import { rebuildsOf, type Rebuilds } from '../api/connector-runs.js';
import type { ResultOf, ScanReading } from '../api/endpoints.js';
import { connectorSteps } from '../collectors/index.js';
import { pollDeadline, progressDeadline, type PollDeadline } from './deadline.js';
import type { PollResult } from './endpoint-runner.js';
import type { GroupPoller, PollContext, PollerParts } from './mapping.js';

export interface ScanPollerOptions {
  /** The scan's reader; a reader without `progress` ends its polls within their interval. */
  readonly reading: ScanReading;
  /** Told what each read of the history says of the rebuilds, whether or not the stack counts saved queries now (a reload may add some). */
  readonly rebuilds: (seen: Rebuilds) => void;
}

export class ScanPoller implements GroupPoller {
  constructor(
    private readonly parts: PollerParts,
    private readonly opts: ScanPollerOptions,
  ) {}

  /** The bound of a poll: the interval, or for a scan that shows its progress, until it stops moving. */
  deadline(outer: AbortSignal | undefined, interval: number): PollDeadline {
    const progress = this.opts.reading.progress;
    return progress ? progressDeadline(outer, interval, progress.stallSeconds(), () => progress.idleSeconds()) : pollDeadline(outer, interval);
  }

  async poll(ctx: PollContext): Promise<void> {
    const { runner, stack } = this.parts;
    await runner.run(
      'connector',
      async () => {
        const read = await this.opts.reading.read(ctx);
        this.opts.rebuilds(rebuildsOf(read.runs, stack().timezone));
        const held = runner.status().some((s) => s.endpoint === 'connector' && s.state === 'ok');
        if (!read.changed && held) return { kind: 'unchanged' };
        return this.map(read.runs);
      },
      ctx.signal,
    );
  }

  /** The mapping, a step of runs at a time with the event loop free between steps. */
  private async map(runs: ResultOf<'connector'>): Promise<PollResult> {
    const steps = connectorSteps(runs, this.parts.mapper.context('connector'));
    for (;;) {
      const step = steps.next();
      if (step.done) return { kind: 'samples', samples: step.value };
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

/** A scanned endpoint read through `get`, for readers without a scan of their own: every read counts as changed. */
export function readThroughGet(api: PollerParts['api']): ScanReading {
  return { read: async (ctx) => ({ changed: true, runs: await api.get('connector', undefined, ctx) }) };
}
