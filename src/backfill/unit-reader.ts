/**
 * Reads one stack's history unit by unit (a day's counts, the connector history, an Action's
 * jobs, a name's change history): each unit is taken from the answers of earlier runs when they
 * hold it, else read and kept at once; a failure is logged once per endpoint, counted by the
 * fail-fast policy and listed as missing; once the policy stops the stack (or an endpoint), the
 * units after it are listed as missing without a request.
 */
import type { Logger } from '../logger.js';
import type { StackAnswers } from './answers.js';
import { FailFast, type StopReason } from './fail-fast.js';
import type { ProgressPart } from './progress.js';

/** A unit that has no samples in the backfill, and why. */
export interface MissingUnit {
  /** The unit's key: `counts/2026-11-03`, `action-jobs/<id>`. */
  readonly key: string;
  readonly endpoint: string;
  /** `counts of 2026-11-03`, `jobs of Action 42`. */
  readonly what: string;
  readonly reason: string;
}

export class UnitReader {
  readonly missing: MissingUnit[] = [];
  private readonly policy: FailFast;
  private readonly skipped = new Map<string, string>();
  private readonly logged = new Set<string>();
  /** How long each unit of the stack's current run of failures took, ms. */
  private failing: number[] = [];

  constructor(
    private readonly opts: {
      readonly stack: string;
      readonly answers: StackAnswers;
      readonly logger: Logger;
      readonly progress: ProgressPart;
      readonly signal?: AbortSignal;
    },
  ) {
    this.policy = new FailFast(opts.stack);
  }

  /** Why the stack's reading stopped early, if it did. */
  get stopped(): StopReason | undefined {
    return this.policy.stop;
  }

  /**
   * The unit's answer: kept, read now, or undefined (then listed as missing). Throws only when
   * the signal stopped the run (the answer in flight is then lost, and asked again next time).
   */
  async unit<T>(key: string, endpoint: string, what: string, read: () => Promise<T>): Promise<T | undefined> {
    const { answers, signal, progress } = this.opts;
    const kept = answers.get<T>(key);
    if (kept !== undefined) {
      progress.step();
      return kept;
    }
    signal?.throwIfAborted();
    const stop = this.policy.stop?.why ?? this.skipped.get(endpoint);
    if (stop !== undefined) {
      this.missing.push({ key, endpoint, what, reason: `not read: ${stop}` });
      progress.step();
      return undefined;
    }
    const started = Date.now();
    let failedAfter: number | undefined;
    try {
      const value = await read();
      answers.record(key, value);
      this.policy.succeeded(endpoint);
      return value;
    } catch (err) {
      if (signal?.aborted) throw err;
      this.failed(key, endpoint, what, err);
      failedAfter = Date.now() - started;
      return undefined;
    } finally {
      // The outlook first: the step draws the line with it.
      if (!signal?.aborted) this.foresee(failedAfter);
      progress.step();
    }
  }

  /**
   * For the progress line's ETA, while the stack's failures run towards the rule's limit: when the
   * rule stops the stack if they go on (the units left at the failing ones' pace); none after an answer.
   */
  private foresee(failedAfterMs: number | undefined): void {
    // Stopped: the units left are listed as missing at once.
    const stop = this.policy.stop;
    if (stop) {
      this.opts.progress.outlook({ seconds: 0, why: stop.why, stopped: true });
      return;
    }
    const streak = this.policy.streak();
    if (failedAfterMs === undefined || !streak) {
      if (this.failing.length > 0) this.opts.progress.outlook(undefined);
      this.failing = [];
      return;
    }
    this.failing = [...(streak.count > 1 ? this.failing.slice(-(streak.count - 1)) : []), failedAfterMs];
    const mean = this.failing.reduce((n, ms) => n + ms, 0) / this.failing.length / 1000;
    this.opts.progress.outlook({ seconds: (streak.limit - streak.count) * mean, why: `${streak.what}: ${streak.count} in a row, ${streak.limit} stop the reading` });
  }

  private failed(key: string, endpoint: string, what: string, err: unknown): void {
    const error = (err as Error).message;
    this.missing.push({ key, endpoint, what, reason: error });
    const verdict = this.policy.failed(err, endpoint);
    const { logger } = this.opts;
    if (verdict.action === 'stop-stack') {
      logger.error({ endpoint, err: error }, `${what} could not be read: ${verdict.why}; stopped reading this stack. ${verdict.hint}`);
      return;
    }
    if (verdict.action === 'skip-endpoint') {
      this.skipped.set(endpoint, verdict.why);
      logger.error({ endpoint, err: error }, `${what} could not be read: ${verdict.why}; the rest of ${endpoint} is not asked for`);
      return;
    }
    // Once per endpoint: a failing endpoint fails for every day, Action or name alike.
    if (this.logged.has(endpoint)) return;
    this.logged.add(endpoint);
    logger.error({ endpoint, err: error }, `${what} could not be read; it has no samples in the backfill (the summary lists what is missing; run the same command again to read it)`);
  }
}
