/**
 * Issue 11 #6: the CMDB's own words never reach the status page's model or the log, through the
 * real client against the real simulator: status codes, field names and types only.
 */
import { describe, expect, it } from 'vitest';
import { sim, simStack } from '../cmdb/helpers/sim.js';
import { simPoller } from './sim-poller.js';

/** Text no scrubber knows: a credential of some other system that the CMDB happens to quote. */
const PLANTED = 'svc-backup:Pa55w0rd-planted';

describe('server text is never shown', () => {
  it('a wrong-typed field: the status error and every log line name the field and type only', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'metrics_data', status: 200, body: JSON.stringify({ assetCount: PLANTED, userCount: 3 }) });
    const p = simPoller(simStack(s));
    await p.poller.poll('inventory');
    expect(p.status('metrics_data')).toMatchObject({ outcome: 'invalid_body' });
    expect(p.status('metrics_data')?.error).toBe(
      `GET /CMDB/v2/system/metrics/data: invalid response body: assetCount: expected a number, got a text (${PLANTED.length} characters)`,
    );
    expect(p.log.text()).not.toContain('Pa55w0rd');
  });

  it("the token endpoint's message: status and code only, on the status page and in the log", async () => {
    const s = await sim();
    s.addFault({ endpoint: 'access_token', status: 401, body: JSON.stringify({ code: 401001, message: `invalid secret; last good login ${PLANTED}` }) });
    const p = simPoller(simStack(s));
    await p.poller.poll('license');
    expect(p.status('license')).toMatchObject({ outcome: 'rejected' });
    expect(p.status('license')?.error).toMatch(/^POST \/CMDB\/v1\/access_token: token rejected: 401 Unauthorized, code 401001, a message of \d+ characters \(not shown\)$/);
    expect(p.log.text()).not.toContain('Pa55w0rd');
    expect(p.log.text()).not.toContain('invalid secret');
  });
});
