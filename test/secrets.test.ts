import { describe, expect, it } from 'vitest';
import { SecretScrubber } from '../src/secrets.js';

describe('SecretScrubber', () => {
  it('scrubs added values for good, JSON-escaped too', () => {
    const s = new SecretScrubber();
    s.add('pa"ss-word');
    expect(s.scrub('a pa"ss-word b')).toBe('a [REDACTED] b');
    expect(s.scrub(JSON.stringify({ v: 'pa"ss-word' }))).toBe('{"v":"[REDACTED]"}');
  });

  it('keeps the current and the previous value of a rotated slot and drops older ones', () => {
    const s = new SecretScrubber();
    s.add('configured-secret');
    for (let i = 0; i < 100; i++) s.rotate('token:a', `token-number-${i}`);
    // One configured value and two of the slot, however many renewals there were.
    expect(s.size).toBe(3);
    expect(s.scrub('token-number-99 token-number-98 token-number-97')).toBe('[REDACTED] [REDACTED] token-number-97');
    expect(s.scrub('configured-secret')).toBe('[REDACTED]');
  });

  it('keeps slots apart and forgets one whose stack is gone', () => {
    const s = new SecretScrubber();
    s.rotate('token:a', 'aaaa-1');
    s.rotate('token:b', 'bbbb-1');
    s.rotate('token:a', 'aaaa-1');
    expect(s.size).toBe(2);
    s.forget('token:a');
    expect(s.scrub('aaaa-1 bbbb-1')).toBe('aaaa-1 [REDACTED]');
  });
});
