/**
 * The retry, wait and pause policy of the request pipeline as a table: one row per situation, the
 * decision it must come to. The transport only carries these decisions out (test/cmdb/client-retry
 * proves that against the simulator).
 */
import { describe, expect, it } from 'vitest';
import { decide, MAX_REFUSALS, NO_COUNTS, type Attempted, type Decision, type PolicyInput, type RequestCounts, type StackView } from '../../src/cmdb/policy.js';

const NOW = 1_700_000_000_000;
const RETRIES = { max: 3, minDelaySeconds: 1, maxDelaySeconds: 8, maxRetryAfterSeconds: 60 };
const QUIET: StackView = { refusalStreak: 0, newRefusal: true, answeredOthers: false, othersAskingToWait: 0 };

interface Row {
  readonly endpoint?: PolicyInput['endpoint'];
  readonly attempted: Attempted;
  readonly counts?: Partial<RequestCounts>;
  readonly stack?: Partial<StackView>;
  /** ms from NOW; absent: no deadline. */
  readonly deadlineIn?: number;
  readonly retryTimeouts?: boolean;
}

function run(row: Row): Decision {
  return decide({
    endpoint: row.endpoint ?? 'license',
    attempted: row.attempted,
    counts: { ...NO_COUNTS, ...row.counts },
    stack: { ...QUIET, ...row.stack },
    now: NOW,
    ...(row.deadlineIn === undefined ? {} : { deadline: NOW + row.deadlineIn }),
    retryTimeouts: row.retryTimeouts ?? true,
    retries: RETRIES,
    jitter: 0,
  });
}

const answer = (status: number, retryAfter?: string, date?: string): Attempted => ({
  kind: 'answer',
  status,
  ...(retryAfter === undefined ? {} : { retryAfter }),
  ...(date === undefined ? {} : { date }),
});
const failure = (f: 'timeout' | 'network' | 'not_json' | 'final'): Attempted => ({ kind: 'failure', failure: f });
const HOUR = 3_600_000;
const until = (ms: number) => NOW + ms;

describe('the request policy', () => {
  it.each<[string, Row, Partial<Decision>]>([
    // Answers the caller takes as they are.
    ['a 200 goes to the caller and ends a run of refusals', { attempted: answer(200), stack: { refusalStreak: 3 } }, { next: 'return', refusalStreak: 0 }],
    ['a 404 goes to the caller', { attempted: answer(404) }, { next: 'return' }],
    ['a 401 goes to the caller (the client renews the token)', { attempted: answer(401) }, { next: 'return' }],
    ['a 403 is never retried', { attempted: answer(403) }, { next: 'return' }],

    // Failures before an answer.
    ['a network error is retried after the back-off', { attempted: failure('network') }, { next: 'retry', waitMs: 1000, counts: { retries: 1, refusals: 0, ownRefusals: 0 } }],
    ['a body cut short (not JSON) is retried', { attempted: failure('not_json') }, { next: 'retry', waitMs: 1000 }],
    ['a timeout is retried', { attempted: failure('timeout') }, { next: 'retry' }],
    ['a timed-out connector page is not retried at the same size', { attempted: failure('timeout'), retryTimeouts: false }, { next: 'rethrow', pause: undefined }],
    ['a final failure (TLS, schema) is not retried', { attempted: failure('final') }, { next: 'rethrow', pause: undefined }],
    ['the last retry spent: the failure stands', { attempted: failure('network'), counts: { retries: 3 } }, { next: 'rethrow', pause: undefined }],
    ['the token endpoint giving up holds the stack a back-off', { endpoint: 'access_token', attempted: failure('network'), counts: { retries: 3 } }, { next: 'rethrow', pause: { scope: 'stack', until: until(1000) } }],

    // 5xx.
    ['a 500 is retried after the back-off', { attempted: answer(500) }, { next: 'retry', waitMs: 1000, pause: undefined, counts: { retries: 1, refusals: 0, ownRefusals: 0 } }],
    ['a 503 without Retry-After is retried after the back-off', { attempted: answer(503) }, { next: 'retry', waitMs: 1000, pause: undefined }],
    ['a 503 after the last retry goes to the caller', { attempted: answer(503, '5'), counts: { retries: 3 } }, { next: 'return', pause: undefined }],
    ['a 503 with Retry-After pauses its group and retries after it', { attempted: answer(503, '20') }, { next: 'retry', waitMs: undefined, pause: { scope: 'group', until: until(20_000) } }],
    ['a 502 with Retry-After pauses its group', { attempted: answer(502, '20') }, { next: 'retry', pause: { scope: 'group', until: until(20_000) } }],
    ['a 500 with Retry-After is a plain 500', { attempted: answer(500, '20') }, { next: 'retry', waitMs: 1000, pause: undefined }],
    ['a 503 with Retry-After while another endpoint waits pauses the stack', { attempted: answer(503, '20'), stack: { othersAskingToWait: 1 } }, { next: 'retry', pause: { scope: 'stack', until: until(20_000) } }],
    ['the token endpoint\'s Retry-After pauses the stack', { endpoint: 'access_token', attempted: answer(503, '20') }, { next: 'retry', pause: { scope: 'stack', until: until(20_000) } }],
    ['a 503 Retry-After of 0 still waits retries.minDelaySeconds', { attempted: answer(503, '0') }, { next: 'retry', pause: { scope: 'group', until: until(1000) } }],
    ['a 503 Retry-After above maxRetryAfterSeconds fails now, its group paused for the cap', { attempted: answer(503, '3600') }, { next: 'return', pause: { scope: 'group', until: until(60_000) } }],
    ['a 503 Retry-After past the poll\'s deadline fails now', { attempted: answer(503, '20'), deadlineIn: 10_000 }, { next: 'return', pause: { scope: 'group', until: until(20_000) } }],
    [
      'a Retry-After date is read against the server\'s Date header, not our clock',
      { attempted: answer(503, new Date(NOW + 600_000 + 30_000).toUTCString(), new Date(NOW + 600_000).toUTCString()) },
      { next: 'retry', pause: { scope: 'group', until: until(30_000) } },
    ],
    ['a Retry-After date without a Date header is read against our clock', { attempted: answer(503, new Date(NOW + 30_000).toUTCString()) }, { next: 'retry', pause: { scope: 'group', until: until(30_000) } }],

    // 429: the account's limit.
    ['a 429 with Retry-After pauses the stack and does not spend a retry', { attempted: answer(429, '3'), deadlineIn: HOUR }, { next: 'retry', pause: { scope: 'stack', until: until(3000) }, counts: { retries: 0, refusals: 1, ownRefusals: 0 } }],
    ['a 429 without Retry-After pauses the stack minDelaySeconds', { attempted: answer(429), deadlineIn: HOUR }, { next: 'retry', pause: { scope: 'stack', until: until(1000) }, refusalStreak: 1 }],
    ['the third 429 in a row without Retry-After waits four times as long', { attempted: answer(429), stack: { refusalStreak: 2 }, deadlineIn: HOUR }, { pause: { scope: 'stack', until: until(4000) }, refusalStreak: 3 }],
    ['the doubling stops at maxDelaySeconds', { attempted: answer(429), stack: { refusalStreak: 9 }, deadlineIn: HOUR }, { pause: { scope: 'stack', until: until(8000) }, refusalStreak: 10 }],
    ['a 429 to a request sent before the pause began is the same refusal again', { attempted: answer(429), stack: { refusalStreak: 2, newRefusal: false }, deadlineIn: HOUR }, { pause: { scope: 'stack', until: until(2000) }, refusalStreak: 2 }],
    ['a 429 Retry-After above maxRetryAfterSeconds gives up, the stack paused for the cap', { attempted: answer(429, '120'), deadlineIn: HOUR }, { next: 'give_up', pause: { scope: 'stack', until: until(60_000) }, reason: '429 Too Many Requests: Retry-After 120s is above retries.maxRetryAfterSeconds (60s)' }],
    ['a 429 whose wait does not fit the poll gives up now', { attempted: answer(429, '2'), deadlineIn: 1000 }, { next: 'give_up', pause: { scope: 'stack', until: until(2000) }, reason: '429 Too Many Requests: the 2s wait it asks for does not fit in what is left of the poll' }],
    ['without a deadline a 429 spends a retry', { attempted: answer(429, '1'), counts: { refusals: 3 } }, { next: 'give_up', reason: '429 Too Many Requests after 3 retries' }],
    ['with a deadline a 429 waits however often, up to MAX_REFUSALS', { attempted: answer(429, '1'), counts: { refusals: 10 }, deadlineIn: HOUR }, { next: 'retry' }],
    [`the ${MAX_REFUSALS}th 429 in a row gives up`, { attempted: answer(429, '1'), counts: { refusals: MAX_REFUSALS - 1 }, deadlineIn: HOUR }, { next: 'give_up', reason: `429 Too Many Requests ${MAX_REFUSALS} times in a row` }],
    ['a 429 while the CMDB answers the others spends a retry; the stack still waits (the account\'s limit)', { attempted: answer(429, '1'), stack: { answeredOthers: true }, deadlineIn: HOUR }, { next: 'retry', pause: { scope: 'stack', until: until(1000) }, counts: { retries: 0, refusals: 1, ownRefusals: 1 } }],
    ['such 429s past retries.max give up', { attempted: answer(429, '1'), stack: { answeredOthers: true }, counts: { ownRefusals: 3, refusals: 3 }, deadlineIn: HOUR }, { next: 'give_up', pause: undefined, reason: '429 Too Many Requests 4 times while the CMDB answered other requests of the stack' }],
  ])('%s', (_name, row, expected) => {
    const decision = run(row);
    for (const [key, value] of Object.entries(expected)) expect(decision[key as keyof Decision], key).toEqual(value);
  });

  it('the back-off grows with the retries spent and draws its jitter', () => {
    const at = (retries: number, jitter: number) =>
      decide({ endpoint: 'license', attempted: answer(500), counts: { ...NO_COUNTS, retries }, stack: QUIET, now: NOW, retryTimeouts: true, retries: RETRIES, jitter }).waitMs;
    expect([at(0, 0), at(0, 1), at(1, 1), at(2, 1)]).toEqual([1000, 2000, 4000, 8000]);
  });
});
