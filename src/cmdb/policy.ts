/**
 * The one decision of the request pipeline, after an attempt: return the answer, retry after a
 * back-off, pause (the endpoint's group or the stack) and retry, or give up. A pure function of the
 * attempt, the server's Retry-After, the request's counts, its deadline and the stack's state;
 * transport.ts carries it out. docs/design.md tables where each pause belongs.
 */
import type { EndpointName } from '../api/endpoints.js';
import type { RetryConfig } from '../config/types.js';
import { retryAfterMs } from '../time.js';
import { backoffDelayMs } from './backoff.js';

export type PauseScope = 'group' | 'stack';

/** What one attempt came to: an answer (any status), or a failure before one. */
export type Attempted =
  | {
      readonly kind: 'answer';
      readonly status: number;
      /** The Retry-After header as sent (delta-seconds or an HTTP-date). */
      readonly retryAfter?: string;
      /** The Date header as sent: the server's clock, against which an HTTP-date is read. */
      readonly date?: string;
    }
  /** `final`: a failure no retry mends (TLS, a body that does not fit the schema, too large, a refused redirect). */
  | { readonly kind: 'failure'; readonly failure: 'timeout' | 'network' | 'not_json' | 'final' };

/** The request's own counts: its state across attempts. */
export interface RequestCounts {
  /** Retries spent on network errors, timeouts, bodies cut short and 5xx. */
  readonly retries: number;
  /** 429s this request got. */
  readonly refusals: number;
  /** 429s this request got while the CMDB answered the stack's other requests. */
  readonly ownRefusals: number;
}

export const NO_COUNTS: RequestCounts = { retries: 0, refusals: 0, ownRefusals: 0 };

/** What else the stack is going through (src/cmdb/pauses.ts keeps it). */
export interface StackView {
  /** 429s without Retry-After in a row on the stack before this one: each doubles the pause. */
  readonly refusalStreak: number;
  /** This attempt left after the stack's last refusal pause was set: a new refusal, not one seen again. */
  readonly newRefusal: boolean;
  /** The CMDB answered another request of the stack (not with a 429) while this one waited or was in flight. */
  readonly answeredOthers: boolean;
  /** Other endpoints of the stack whose Retry-After pause is in force now. */
  readonly othersAskingToWait: number;
}

export interface PolicyInput {
  readonly endpoint: EndpointName;
  readonly attempted: Attempted;
  readonly counts: RequestCounts;
  readonly stack: StackView;
  /** ms since the epoch, the exporter's clock. */
  readonly now: number;
  /** When the caller gives up (ms); absent: no deadline (the token fetch, a backfill). */
  readonly deadline?: number;
  /** Ask again after a timeout: off for connector pages, whose reader asks for half the page instead. */
  readonly retryTimeouts: boolean;
  readonly retries: RetryConfig;
  /** A draw in [0, 1) for the back-off's jitter. */
  readonly jitter: number;
}

export interface Decision {
  /** `return`: the answer goes to the caller as it is (a 2xx, or a status the caller turns into an error). */
  readonly next: 'return' | 'retry' | 'give_up' | 'rethrow';
  /** Before the retry: the back-off, ms (a pause is waited in the budget instead). */
  readonly waitMs?: number;
  /** Set before anything else: no request of the scope leaves before `until` (ms). */
  readonly pause?: { readonly scope: PauseScope; readonly until: number };
  /** The request's counts after this attempt. */
  readonly counts: RequestCounts;
  /** The stack's run of 429s without Retry-After after this attempt: 0 once the CMDB answers otherwise. */
  readonly refusalStreak: number;
  /** give_up: why, for the CmdbRateLimitedError (after `METHOD /path: `). */
  readonly reason?: string;
}

/** 429s in a row after which one request of a poll gives up (its poll's deadline usually ends it sooner). */
export const MAX_REFUSALS = 20;

/** Statuses whose Retry-After is honoured besides 429: the server says when it will be back. */
const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

export function decide(i: PolicyInput): Decision {
  const a = i.attempted;
  if (a.kind === 'failure') return afterFailure(i, a.failure);
  if (a.status === 429) return afterRefusal(i, retryAfterMs(a.retryAfter, a.date, i.now));
  // Any other answer ends a run of refusals: the account's limit is not what refuses now.
  if (a.status >= 500) return afterServerError(i, a.status, retryAfterMs(a.retryAfter, a.date, i.now));
  return { next: 'return', counts: i.counts, refusalStreak: 0 };
}

const backoff = (i: PolicyInput) => backoffDelayMs(i.counts.retries, i.retries, () => i.jitter);

function afterFailure(i: PolicyInput, failure: 'timeout' | 'network' | 'not_json' | 'final'): Decision {
  const retryable = failure === 'network' || failure === 'not_json' || (failure === 'timeout' && i.retryTimeouts);
  const kept = { counts: i.counts, refusalStreak: i.stack.refusalStreak };
  if (retryable && i.counts.retries < i.retries.max) {
    return { next: 'retry', waitMs: backoff(i), ...kept, counts: { ...i.counts, retries: i.counts.retries + 1 } };
  }
  return { next: 'rethrow', ...kept, ...(retryable ? tokenHold(i) : {}) };
}

/** The token endpoint gave up on a failure that may pass: the stack waits a back-off before its next request asks for a token again. */
function tokenHold(i: PolicyInput): Pick<Decision, 'pause'> {
  return i.endpoint === 'access_token' ? { pause: { scope: 'stack', until: i.now + backoff(i) } } : {};
}

function afterServerError(i: PolicyInput, status: number, asked: number | undefined): Decision {
  const r = i.retries;
  const answered = { counts: i.counts, refusalStreak: 0 };
  if (i.counts.retries >= r.max) return { next: 'return', ...answered, ...tokenHold(i) };
  const counts = { ...i.counts, retries: i.counts.retries + 1 };
  if (!RETRY_AFTER_STATUSES.has(status) || asked === undefined) return { next: 'retry', waitMs: backoff(i), ...answered, counts };
  // One endpoint's backend asks to wait: its group waits. A second one asking while the first pause holds is the service.
  const scope: PauseScope = i.endpoint === 'access_token' || i.stack.othersAskingToWait > 0 ? 'stack' : 'group';
  const capMs = r.maxRetryAfterSeconds * 1000;
  const pause = { scope, until: i.now + clampWait(asked, r, capMs) };
  // Longer than we may wait, or than the poll has left: the answer stands now, the pause still holds the scope.
  if (asked > capMs || (i.deadline !== undefined && pause.until >= i.deadline)) return { next: 'return', ...answered, pause };
  return { next: 'retry', ...answered, counts, pause };
}

function afterRefusal(i: PolicyInput, asked: number | undefined): Decision {
  const { retries: r, stack } = i;
  const own = stack.answeredOthers;
  const counts = { ...i.counts, refusals: i.counts.refusals + 1, ownRefusals: i.counts.ownRefusals + (own ? 1 : 0) };
  // Refused while the CMDB answered the stack's other requests: about this request, so it spends a
  // retry and fails alone instead of waiting out its poll and taking its group down with it.
  if (own && counts.ownRefusals > r.max) {
    return { next: 'give_up', counts, refusalStreak: stack.refusalStreak, reason: `429 Too Many Requests ${counts.ownRefusals} times while the CMDB answered other requests of the stack` };
  }
  // No word from the server: a pause that doubles with each refusal in a row. A 429 to a request
  // that left before the current pause began is the same refusal seen again, not a new one.
  const refusalStreak = asked === undefined && stack.newRefusal ? stack.refusalStreak + 1 : stack.refusalStreak;
  const minMs = r.minDelaySeconds * 1000;
  const waitMs = asked ?? Math.min(Math.max(minMs, r.maxDelaySeconds * 1000), minMs * 2 ** Math.max(0, refusalStreak - 1));
  // Our own pause is bounded by maxDelaySeconds already; only the server's word meets maxRetryAfterSeconds.
  const capMs = asked === undefined ? waitMs : r.maxRetryAfterSeconds * 1000;
  // The first refusal of an account's limit comes while the requests let in before it are answered
  // too: a 429 holds the stack whatever else was answered meanwhile.
  const pause = { scope: 'stack' as const, until: i.now + clampWait(waitMs, r, capMs) };
  const base = { counts, refusalStreak, pause };
  if (asked !== undefined && asked > capMs) {
    return { next: 'give_up', ...base, reason: `429 Too Many Requests: Retry-After ${Math.ceil(asked / 1000)}s is above retries.maxRetryAfterSeconds (${r.maxRetryAfterSeconds}s)` };
  }
  if (i.deadline !== undefined && pause.until >= i.deadline) {
    return { next: 'give_up', ...base, reason: `429 Too Many Requests: the ${Math.ceil(waitMs / 1000)}s wait it asks for does not fit in what is left of the poll` };
  }
  // A request of a poll waits as long as its deadline allows; one without (the token fetch several
  // polls share, a backfill) spends a retry per refusal.
  if (i.deadline === undefined && counts.refusals > r.max) return { next: 'give_up', ...base, reason: `429 Too Many Requests after ${r.max} retries` };
  if (i.deadline !== undefined && counts.refusals >= MAX_REFUSALS) return { next: 'give_up', ...base, reason: `429 Too Many Requests ${counts.refusals} times in a row` };
  return { next: 'retry', ...base };
}

/** A wait the server asked for: at least retries.minDelaySeconds, at most `capMs`. */
function clampWait(ms: number, r: RetryConfig, capMs: number): number {
  const minMs = r.minDelaySeconds * 1000;
  return Math.min(Math.max(ms, minMs), Math.max(capMs, minMs));
}
