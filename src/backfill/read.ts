/**
 * Reads every stack's history at once (one road each, the daemon's own client and readers, paced
 * at the backfill's share), into the answers of --out, with one progress line for all of them.
 * Stopped by the signal, it says how many requests it sent (ReadStopped).
 */
import { Registry } from 'prom-client';
import { openRoad } from '../cmdb/road.js';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import { createInstruments } from '../metrics/instruments.js';
import type { SecretScrubber } from '../secrets.js';
import { stackAnswers, type AnswerJournal } from './answers.js';
import { readHistory, type StackHistory } from './history.js';
import { BorrowedToken, daemonWaitMs } from './borrowed-token.js';
import { dayKeys, type StackPlan } from './plan.js';
import { Progress } from './progress.js';

/** The days whose counts a stack's ranges need. */
export function daysOf(ranges: ReadonlyArray<readonly [number, number]>): Array<{ start: number; text: string }> {
  const byStart = new Map<number, { start: number; text: string }>();
  for (const [a, b] of ranges) for (const d of dayKeys(a, b)) byStart.set(d.start, d);
  return [...byStart.values()].sort((x, y) => x.start - y.start);
}

/**
 * How long a backfill's token request may go without the first byte of its answer (the real
 * service answers one in under a second). Not asked again within the request: the unit fails, and
 * three in a row stop the stack (fail-fast.ts), so a CMDB that takes the connection and never
 * answers stops the reading within a minute (docs/backfill.md, "Fails fast, and says why").
 */
export const TOKEN_FIRST_BYTE_SECONDS = 15;

export interface ReadAll {
  readonly histories: StackHistory[];
  /** Requests sent (every outcome), as the roads' request events report them. */
  readonly requests: number;
  readonly seconds: number;
}

/** The reading was stopped by the signal: what was read is kept in the answers; `requests` were sent. */
export interface ReadStopped {
  readonly stopped: true;
  readonly requests: number;
}

export async function readStacks(opts: {
  readonly stacks: readonly StackConfig[];
  readonly ranges: ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>;
  readonly plans: readonly StackPlan[];
  readonly journal: AnswerJournal;
  readonly logger: Logger;
  readonly scrubber: SecretScrubber;
  readonly signal: AbortSignal;
  readonly progressOut: { isTTY?: boolean; write(text: string): unknown };
  /** The daemon's --storage.path: its token is used instead of asking for one (borrowed-token.ts). */
  readonly storagePath?: string;
}): Promise<ReadAll | ReadStopped> {
  const started = Date.now();
  const registry = new Registry();
  const instruments = createInstruments(registry, { defaultMetrics: false });
  const reading = new Progress('reading history', opts.plans.reduce((n, p) => n + p.knownRequests, 0), 'requests', opts.progressOut);
  // The backfill's own figure: requests that left, as the roads report them (not read back from a registry).
  let requests = 0;
  try {
    const histories = await Promise.all(
      opts.stacks.map(async (stack) => {
        const ranges = opts.ranges.get(stack.name) ?? [];
        const from = Math.min(...ranges.map((r) => r[0]));
        const to = Math.max(...ranges.map((r) => r[1]));
        const logger = opts.logger.child({ stack: stack.name });
        const { storagePath, scrubber, signal } = opts;
        const road = openRoad({
          stack,
          requestsPerMinute: stack.backfillRequestsPerMinute,
          instruments,
          logger,
          scrubber,
          // A token answer is small: one that has not begun within TOKEN_FIRST_BYTE_SECONDS will not come.
          tokenFirstByteSeconds: Math.min(stack.timeoutSeconds, TOKEN_FIRST_BYTE_SECONDS),
          ...(storagePath !== undefined ? { tokens: (own) => new BorrowedToken(own, { dir: storagePath, stack, scrubber, logger, waitMs: daemonWaitMs(stack), lifetime: signal }) } : {}),
        });
        road.client.events.requests.on(() => requests++);
        try {
          return await readHistory({
            stack,
            readers: road.readers,
            logger,
            from,
            to,
            days: daysOf(ranges),
            answers: stackAnswers(opts.journal, stack.name),
            signal: opts.signal,
            progress: reading.part(stack.name, opts.plans.find((p) => p.stack === stack.name)?.knownRequests ?? 0),
          });
        } finally {
          await road.close();
        }
      }),
    );
    reading.finish(`(${requests} sent, ${opts.journal.size - opts.journal.readThisRun} answers from earlier runs)`);
    return { histories, requests, seconds: (Date.now() - started) / 1000 };
  } catch (e) {
    if (opts.signal.aborted) return { stopped: true, requests };
    throw e;
  }
}
