/** The daemon's hints (src/scheduler/hints.ts) say what the backfill's say where both meet the same cause. */
import { describe, expect, it } from 'vitest';
import { hintFor } from '../../src/scheduler/hints.js';

describe('the 401 hint', () => {
  it('names the credentials, and another process with the same client id taking the tokens (a CMDB that keeps one token per client)', () => {
    const hint = hintFor('401', 'license');
    expect(hint).toMatch(/check the client id and secret/);
    // The words of the backfill's own hint (src/backfill/fail-fast.ts) and of the client's error for it.
    expect(hint).toMatch(/another process with the same client id \(a backfill\?\) may take each token it grants \(a CMDB that keeps one token per client\): give each process a client id of its own/);
  });
});
