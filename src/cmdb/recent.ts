/**
 * What became of a stack's recent requests, for the status page's "CMDB unreachable" line: since
 * when every request failed to connect or timed out, of how many endpoints. Any answer, even a 500
 * or a body that does not parse, means the CMDB is reachable.
 */
import type { RequestOutcome } from '../errors.js';

/** The stack's requests as the status page reads them (unix seconds). */
export interface RequestRecord {
  /**
   * When the first of the failures in a row to connect or to get an answer in time was sent (not
   * when it failed: a timeout is known only timeoutSeconds later), never before the newest answer;
   * undefined after an answer.
   */
  readonly failingSince?: number;
  /** How many requests in a row failed so. */
  readonly failures: number;
  /** How many endpoints (the token endpoint included) those failures were of. */
  readonly failingEndpoints: number;
  /** The newest answer of the CMDB, whatever its status. */
  readonly lastAnswerAt?: number;
}

/** One request that left, as the road reports it (src/cmdb/events.ts RequestEvent). */
export interface RequestReport {
  readonly outcome: RequestOutcome;
  readonly endpoint: string;
  /** When it left, ms since the epoch. */
  readonly sentAt: number;
}

/** Outcomes of a request that got no answer from the CMDB. */
const UNANSWERED: ReadonlySet<RequestOutcome> = new Set<RequestOutcome>(['network', 'timeout']);

export class RecentRequests {
  private failingSince: number | undefined;
  private failures = 0;
  private readonly endpoints = new Set<string>();
  private lastAnswerAt: number | undefined;

  /** `at`: unix seconds, when the outcome is known. */
  record(report: RequestReport, at: number): void {
    if (UNANSWERED.has(report.outcome)) {
      // A request sent before the newest answer was overtaken by it: the failing began after that answer.
      const sent = Math.max(Math.min(report.sentAt / 1000, at), this.lastAnswerAt ?? -Infinity);
      this.failingSince = Math.min(this.failingSince ?? sent, sent);
      this.failures++;
      this.endpoints.add(report.endpoint);
      return;
    }
    this.lastAnswerAt = at;
    this.failingSince = undefined;
    this.failures = 0;
    this.endpoints.clear();
  }

  snapshot(): RequestRecord {
    return {
      failures: this.failures,
      failingEndpoints: this.endpoints.size,
      ...(this.failingSince === undefined ? {} : { failingSince: this.failingSince }),
      ...(this.lastAnswerAt === undefined ? {} : { lastAnswerAt: this.lastAnswerAt }),
    };
  }
}
