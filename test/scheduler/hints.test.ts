/** The daemon's hints (src/scheduler/hints.ts) say what the backfill's say where both meet the same cause. */
import { describe, expect, it } from 'vitest';
import { hintFor } from '../../src/scheduler/hints.js';

describe('the 401 hint', () => {
  it('names the credentials, and another process with the same client id taking the tokens (a CMDB that keeps one token per client)', () => {
    const hint = hintFor('401', 'license');
    expect(hint).toMatch(/check the client id and secret/);
    // The words of the backfill's own hint (src/backfill/fail-fast.ts) and of the client's error for it.
    expect(hint).toMatch(/another process with the same client id \(a backfill\?\) may take each token it grants \(a CMDB that keeps one token per client\): give each process a client id of its own, or give the backfill this daemon's --storage.path/);
  });
});

describe('the 401 hint by how the stack authenticates', () => {
  it('with client credentials: not "rejected credentials" (the token endpoint has just accepted them), but tokens taken or a request refused to the client', () => {
    const hint = hintFor('401', 'data_metadata', 'client');
    expect(hint).not.toMatch(/rejected|check the client id and secret/);
    expect(hint).toMatch(/the client id and secret are accepted/);
    expect(hint).toMatch(/another process with the same client id \(a backfill\?\) may take each token it grants/);
    expect(hint).toMatch(/refuses this endpoint to the client/);
  });

  it('with a pre-issued token: replace it', () => {
    expect(hintFor('401', 'license', 'token')).toMatch(/refuses the pre-issued token: replace it/);
  });
});
