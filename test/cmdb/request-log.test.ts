/** LOG_LEVEL=debug shows one line per CMDB request; trace adds the response's shape, never a value. */
import { describe, expect, it } from 'vitest';
import { makeClient, rejection } from './helpers/client.js';
import { FakeClock } from './helpers/clock.js';
import { sim, simStack } from './helpers/sim.js';

describe('request log lines', () => {
  it('logs each request at debug with path, outcome, duration, bytes, attempt and budget wait, never the token', async () => {
    const s = await sim();
    const { client, log } = makeClient(simStack(s));
    log.logger.level = 'debug';
    await client.get('actions');
    const lines = log.lines().filter((l) => l.msg === 'CMDB request');
    expect(lines.map((l) => [l.endpoint, l.request, l.outcome, l.attempt])).toEqual([
      ['access_token', 'POST /CMDB/v1/access_token', '200', 1],
      ['actions', 'GET /CMDB/v2/system/metrics/actions', '200', 1],
    ]);
    const [, page] = lines;
    expect(page).toMatchObject({ page: 0, bytes: expect.any(Number), durationSeconds: expect.any(Number), budgetWaitSeconds: expect.any(Number) });
    expect(page?.bytes).toBeGreaterThan(0);
    const [token] = s.issuedTokens();
    expect(JSON.stringify(log.lines())).not.toContain(token);
    expect(JSON.stringify(log.lines())).not.toContain(s.secret);
  });

  it('counts the attempt of a retried request', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 503, times: 1 });
    const { client, log } = makeClient(simStack(s, { retries: { max: 2, minDelaySeconds: 0.01, maxDelaySeconds: 0.01, maxRetryAfterSeconds: 5 } }));
    log.logger.level = 'debug';
    await client.get('license');
    const lines = log.lines().filter((l) => l.msg === 'CMDB request' && l.endpoint === 'license');
    expect(lines.map((l) => [l.outcome, l.attempt])).toEqual([
      ['503', 1],
      ['200', 2],
    ]);
  });

  it('logs the response shape at trace: keys, types and list lengths, no values', async () => {
    const s = await sim();
    const { client, log } = makeClient(simStack(s));
    log.logger.level = 'trace';
    const license = await client.get('license');
    const [line] = log.lines().filter((l) => l.msg === 'response shape' && l.endpoint === 'license');
    expect(line?.shape).toMatchObject({ licenseType: 'string', customerName: 'string' });
    expect(JSON.stringify(line)).not.toContain(String(license.customerName));
  });

  it('is silent at info', async () => {
    const s = await sim();
    const { client, log } = makeClient(simStack(s));
    log.logger.level = 'info';
    await client.get('license');
    expect(log.lines().filter((l) => l.msg === 'CMDB request' || l.msg === 'response shape')).toEqual([]);
  });

  it('says in a sentence when a pause begins: what set it, who waits and until when', async () => {
    const s = await sim();
    const clock = new FakeClock();
    // One endpoint's backend asks to wait: its group waits, the others go on.
    s.addFault({ endpoint: 'license', status: 503, retryAfterSeconds: 2, times: 1 });
    const { client, log } = makeClient(simStack(s), { clock });
    const until = new Date(clock.now() + 2000).toISOString();
    await client.get('license', undefined, { signal: new AbortController().signal, deadline: clock.now() + 3_600_000 });
    const group = log.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('paused by'));
    expect(group.map((l) => l.msg)).toEqual([
      `paused by a 503 to GET /CMDB/v2/system/metrics/license: the requests of the license group wait until ${until}; the other endpoints go on (a reload ends the pause)`,
    ]);

    // The token endpoint failing without an answer: every request of the stack needs a token.
    const t = await sim();
    t.addFault({ endpoint: 'access_token', reset: true, times: 1 });
    const token = makeClient(simStack(t, { retries: { max: 0 } }), { clock: new FakeClock() });
    await rejection(token.client.get('license'));
    const stack = token.log.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('paused by'));
    expect(stack.map((l) => l.msg)).toEqual([expect.stringMatching(/^paused by the token endpoint failing \(POST \/CMDB\/v1\/access_token\): no request of this stack leaves until \d{4}-\d\d-\d\dT[\d:.]+Z \(a reload ends the pause\)$/)]);
  });
});
