/**
 * What became of a stack's recent requests, for the status page's "CMDB unreachable" line: since
 * when every request has failed to connect or timed out, with no answer of any kind in between.
 * One record per request that left (the `outcome` of cmdb_endpoint_requests_total); any answer,
 * even a 500 or a body that does not parse, means the CMDB is reachable.
 */
import type { RequestOutcome } from '../errors.js';

/** The stack's requests as the status page reads them (unix seconds). */
export interface RequestRecord {
  /** The first of the failures in a row to connect or to get an answer in time; undefined after an answer. */
  readonly failingSince?: number;
  /** How many requests in a row failed so. */
  readonly failures: number;
  /** The newest answer of the CMDB, whatever its status. */
  readonly lastAnswerAt?: number;
}

/** Outcomes of a request that got no answer from the CMDB. */
const UNANSWERED: ReadonlySet<RequestOutcome> = new Set<RequestOutcome>(['network', 'timeout']);

export class RecentRequests {
  private failingSince: number | undefined;
  private failures = 0;
  private lastAnswerAt: number | undefined;

  /** `at`: unix seconds. */
  record(outcome: RequestOutcome, at: number): void {
    if (UNANSWERED.has(outcome)) {
      this.failingSince ??= at;
      this.failures++;
      return;
    }
    this.lastAnswerAt = at;
    this.failingSince = undefined;
    this.failures = 0;
  }

  snapshot(): RequestRecord {
    return {
      failures: this.failures,
      ...(this.failingSince === undefined ? {} : { failingSince: this.failingSince }),
      ...(this.lastAnswerAt === undefined ? {} : { lastAnswerAt: this.lastAnswerAt }),
    };
  }
}
