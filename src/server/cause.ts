/**
 * Why every endpoint of a stack fails, when one reason explains them all: the CMDB unreachable,
 * the credentials rejected, or every request paused by the CMDB. The status page shows it first, as
 * one critical line, and folds the endpoint lines it explains under it. It is judged only from what
 * the stack's runtime exposes (whether its pre-issued token is refused, until when it is paused, its
 * endpoints' outcomes, what became of its recent requests), so that a change in how pauses and
 * failures come about only changes those inputs.
 */
import type { EndpointStatus } from '../scheduler/endpoint-runner.js';
import { pauseCause, type PauseShown, type Problem } from './attention.js';

/** What became of the stack's recent requests (the shape of src/cmdb/recent.ts's RequestRecord). */
export interface RecentRequests {
  /** When the first of the requests in a row that failed to connect or timed out was sent. */
  readonly failingSince?: number;
  readonly failures: number;
  /** How many endpoints those failures were of. */
  readonly failingEndpoints?: number;
  readonly lastAnswerAt?: number;
}

export interface CauseInput {
  /** Unix seconds. */
  readonly now: number;
  /** The CMDB refuses the stack's pre-issued token (401). */
  readonly unauthorized: boolean;
  /** While the CMDB pauses every request of the stack: until when (unix seconds) and the answer that set it. */
  readonly pause?: Pick<PauseShown, 'until' | 'status' | 'request'>;
  readonly endpoints: readonly Pick<EndpointStatus, 'outcome'>[];
  readonly requests?: RecentRequests;
}

export interface StackCause {
  /** The shipped alert that fires for it: its runbook section says what to do. */
  readonly alert: 'CmdbUnreachable' | 'CmdbTokenRejected' | 'CmdbStackPaused';
  /** What it is, in a few words. */
  readonly title: string;
  /** What it means, in one sentence of numbers and fixed words. */
  readonly text: string;
  /** Since when, when the inputs say (else the page's memory of it does). */
  readonly since?: number;
  /** When it ends by itself (a pause), unix seconds. */
  readonly until?: number;
  /** Whether it explains a problem of the stack: that line is folded under it. */
  explains(p: Problem): boolean;
}

/**
 * Two requests in a row, to two endpoints, none answered: the CMDB is unreachable, whatever the
 * intervals (the first poll after the cause shows it, well within one interval). The failures of
 * one endpoint alone may be that endpoint's (a page too slow for timeoutSeconds): they count once
 * they have lasted this long since the first of them was sent.
 */
export const UNREACHABLE_AFTER_SECONDS = 60;
const UNREACHABLE_MIN_FAILURES = 2;
const UNREACHABLE_MIN_ENDPOINTS = 2;

/** Endpoint outcomes an unreachable CMDB produces (blocked: its dependency failed first). */
const UNANSWERED = new Set(['network', 'timeout', 'blocked']);

const endpointDown = (p: Problem) => p.area === 'endpoint' && p.alert === 'CmdbEndpointDown';

function unreachable(input: CauseInput): StackCause | undefined {
  const r = input.requests;
  if (r?.failingSince === undefined || r.failures < UNREACHABLE_MIN_FAILURES) return undefined;
  const endpoints = r.failingEndpoints ?? 1;
  if (endpoints < UNREACHABLE_MIN_ENDPOINTS && input.now - r.failingSince < UNREACHABLE_AFTER_SECONDS) return undefined;
  const to = endpoints > 1 ? ` (to ${endpoints} endpoints)` : '';
  return {
    alert: 'CmdbUnreachable',
    title: 'CMDB unreachable',
    text: `none of the last ${r.failures} requests${to} got an answer: each failed to connect or timed out`,
    since: r.failingSince,
    explains: (p) => endpointDown(p) && UNANSWERED.has(p.outcome ?? ''),
  };
}

function credentials(input: CauseInput): StackCause | undefined {
  const clientRejected = input.endpoints.some((e) => e.outcome === 'rejected');
  if (!input.unauthorized && !clientRejected) return undefined;
  return {
    alert: 'CmdbTokenRejected',
    title: 'credentials rejected',
    text: input.unauthorized
      ? 'the CMDB refuses the pre-issued token (401): replace it (CMDB_TOKEN / tokenFile)'
      : "the token endpoint rejects the stack's client id and secret: every endpoint fails until they are fixed",
    explains: endpointDown,
  };
}

function paused(input: CauseInput): StackCause | undefined {
  const pause = input.pause;
  if (pause === undefined || pause.until <= input.now) return undefined;
  return {
    alert: 'CmdbStackPaused',
    title: 'paused by the CMDB',
    text: `the CMDB asked the exporter to wait (${pauseCause(pause)}): no request of this stack leaves until the pause ends; a reload ends it`,
    until: pause.until,
    explains: endpointDown,
  };
}

/** The stack's cause, if one explains its failures. */
export function stackCause(input: CauseInput): StackCause | undefined {
  return unreachable(input) ?? credentials(input) ?? paused(input);
}
