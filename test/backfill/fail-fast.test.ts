import { describe, expect, it } from 'vitest';
import { FailFast } from '../../src/backfill/fail-fast.js';
import { CmdbHttpError, CmdbNetworkError, CmdbTimeoutError, CmdbTokenRejectedError, CmdbTokensTakenError, CmdbUnauthorizedError } from '../../src/errors.js';

const timeout = () => new CmdbTimeoutError('GET /CMDB/v2/system/metrics/data', 30);
const network = () => new CmdbNetworkError('GET /CMDB/v2/system/metrics/data', 'ECONNREFUSED');
const status = (n: number) => new CmdbHttpError('GET /CMDB/v2/system/metrics/action-jobs/7', n, 'x');

describe('fail fast', () => {
  it.each([
    ['the token endpoint refusing the secret', new CmdbTokenRejectedError('POST /CMDB/v1/access_token', 'token rejected: 401 Invalid client credentials')],
    ['a pre-issued token refused', new CmdbUnauthorizedError('GET /CMDB/v2/system/metrics/data', '401 Unauthorized (the token is not accepted)')],
    ['a bare 401', status(401)],
  ])('stops the stack at once on %s, with a credentials hint', (_what, err) => {
    const p = new FailFast('prod');
    const v = p.failed(err, 'metrics_data');
    expect(v.action).toBe('stop-stack');
    expect(p.stop?.why).toMatch(/^credentials rejected \(/);
    expect(p.stop?.hint).toContain('Check the credentials of stack prod');
  });

  it('401s on every token just granted are tokens taken by another client: not rejected credentials, a failure of the stack three times in a row, with the hint of a client id of its own', () => {
    const p = new FailFast('prod');
    const taken = () => new CmdbTokensTakenError('GET /CMDB/v2/system/metrics/data', '401 Unauthorized on 5 new tokens in a row, each refused as soon as the token endpoint granted it');
    expect(p.failed(taken(), 'metrics_data').action).toBe('go-on');
    expect(p.failed(taken(), 'connector').action).toBe('go-on');
    expect(p.failed(taken(), 'actions').action).toBe('stop-stack');
    expect(p.stop?.why).toMatch(/^3 requests were refused \(401\) on every token just granted in a row/);
    expect(p.stop?.why).not.toContain('credentials rejected');
    expect(p.stop?.hint).toContain("give the backfill the daemon's --storage.path (it then uses the daemon's token) or a client id of its own");
    expect(p.stop?.hint).not.toContain('Check the credentials');
  });

  it('stops the stack after three network errors or timeouts in a row, whatever the endpoint', () => {
    const p = new FailFast('prod');
    expect(p.failed(timeout(), 'metrics_data').action).toBe('go-on');
    expect(p.failed(timeout(), 'connector').action).toBe('go-on');
    const v = p.failed(timeout(), 'actions');
    expect(v.action).toBe('stop-stack');
    expect(p.stop?.why).toMatch(/^3 requests timed out in a row/);
    expect(p.stop?.hint).toContain('reachable');
  });

  it('the token endpoint failing (a 5xx after its retries, which pauses the whole stack on the road) counts for the stack, whichever unit needed the token', () => {
    const p = new FailFast('prod');
    const token = () => new CmdbHttpError('POST /CMDB/v1/access_token', 503, 'Service Unavailable');
    expect(p.failed(token(), 'metrics_data').action).toBe('go-on');
    expect(p.failed(token(), 'connector').action).toBe('go-on');
    expect(p.failed(token(), 'actions')).toMatchObject({ action: 'stop-stack', why: expect.stringMatching(/^3 token requests failed in a row \(last: POST \/CMDB\/v1\/access_token: 503/) });
    expect(p.stop?.hint).toContain('token endpoint');
  });

  it('an answer in between, or another kind of failure, starts the count again', () => {
    const p = new FailFast('prod');
    p.failed(network(), 'metrics_data');
    p.failed(network(), 'metrics_data');
    p.succeeded('metrics_data');
    p.failed(network(), 'metrics_data');
    p.failed(timeout(), 'metrics_data');
    expect(p.failed(network(), 'metrics_data').action).toBe('go-on');
    expect(p.stop).toBeUndefined();
  });

  it('one endpoint failing the same way five times stops that endpoint only; a 403 at once', () => {
    const p = new FailFast('prod');
    for (let i = 0; i < 4; i++) expect(p.failed(status(503), 'action_jobs').action).toBe('go-on');
    const v = p.failed(status(503), 'action_jobs');
    expect(v).toMatchObject({ action: 'skip-endpoint' });
    expect(p.failed(status(403), 'asset_change')).toMatchObject({ action: 'skip-endpoint', why: expect.stringContaining('forbidden') });
    expect(p.stop).toBeUndefined();
  });
});
