import { describe, expect, it } from 'vitest';
import { dayKeys, formatPlan, planStack, secondsAtPace, secondsAtServicePace, serviceSeconds } from '../../src/backfill/plan.js';
import { testStack } from '../helpers/stack.js';

const T0 = Date.parse('2026-11-01T06:00:00Z') / 1000;

describe('backfill plan', () => {
  it('one data?date= request per UTC day the range touches', () => {
    expect(dayKeys(T0, T0 + 3600).map((d) => d.text)).toEqual(['2026-11-01']);
    expect(dayKeys(T0, T0 + 2 * 86_400).map((d) => d.text)).toEqual(['2026-11-01', '2026-11-02', '2026-11-03']);
    expect(dayKeys(T0, T0 + 86_400)[1]?.start).toBe(Date.parse('2026-11-02T00:00:00Z') / 1000);
  });

  it('counts requests per endpoint, the tracked names one each, and what the answers add per unit', () => {
    const stack = testStack({ backfillRequestsPerMinute: 15, track: { assets: ['a', 'b', 'c'], users: ['u'] } });
    const plan = planStack(stack, T0, T0 + 29 * 86_400);
    expect(Object.fromEntries(plan.lines.map((l) => [l.endpoint, l.requests]))).toEqual({
      access_token: 1,
      metrics_data: 30,
      connector: 1,
      data_ingestion: 1,
      actions: 1,
      action_jobs: 0,
      asset_change: 3,
      user_change: 1,
    });
    expect(plan.lines.find((l) => l.endpoint === 'action_jobs')?.more).toBe('+1 per Action, ~4s each');
    // A further page of 2,000 rows takes the service ~47 s (2.3 s per 100 rows), far more than the pace's 4 s.
    expect(plan.lines.find((l) => l.endpoint === 'connector')?.more).toBe(`+1 per further page of ${stack.paging.connectorPageSize} rows (one full scan), ~${Math.round(0.6 + stack.paging.connectorPageSize * 0.023)}s each`);
    expect(plan.knownRequests).toBe(38);
    // The burst of 3 (15/6 rounded up) leaves at once; the other 35 at 4 s each (140 s), and the
    // first connector page holds the line for its own ~47 s (the bucket fills up again meanwhile).
    const page = serviceSeconds(stack.paging.connectorPageSize);
    expect(plan.knownSeconds).toBeGreaterThan(140 + page - 4 * 5);
    expect(plan.knownSeconds).toBeLessThan(140 + page);
    expect(formatPlan(plan, { from: T0, to: T0 + 29 * 86_400 })).toContain('paced at 15 requests a minute');
  });

  it('asks nothing for saved queries and says why they are left out', () => {
    const queries = [{ name: 'q', table: 'asset' as const, query: [[{ searchFieldName: 'Asset_Type', operator: '==', value: 'Server' }]] }];
    const plan = planStack(testStack({ queries }), T0, T0 + 86_400);
    expect(plan.lines.find((l) => l.endpoint === 'data_query')).toEqual({ endpoint: 'data_query', requests: 0, serviceSeconds: 0, more: expect.stringContaining('no "as of" date') });
    expect(formatPlan(plan, { from: T0, to: T0 + 86_400 })).toContain('saved queries are left out: the data query endpoint has no "as of" date');
    expect(planStack(testStack(), T0, T0 + 86_400).lines.map((l) => l.endpoint)).not.toContain('data_query');
  });

  it('leaves out disabled endpoints and the token request of a pre-issued token', () => {
    const stack = testStack({ auth: { kind: 'token', token: 't' }, disabledEndpoints: ['actions', 'user_change'] });
    const names = planStack(stack, T0, T0 + 3600).lines.map((l) => l.endpoint);
    expect(names).toEqual(['metrics_data', 'connector', 'data_ingestion', 'asset_change']);
  });

  it('time at the pace and the service: a request waits for its token, tokens come back while one is served', () => {
    expect(secondsAtServicePace([0, 0, 0, 0], 15)).toBe(4);
    expect(secondsAtServicePace([46.6, 0.6], 15)).toBeCloseTo(47.2, 6);
    expect(secondsAtServicePace(Array.from({ length: 10 }, () => 0.6), 60)).toBeCloseTo(6, 6);
    // Slow answers and a fast pace: the service sets the time.
    expect(secondsAtServicePace([10, 10, 10], 6000)).toBe(30);
  });

  it('time at the pace follows the token bucket: burst first, then one request per 60/rate seconds', () => {
    expect(secondsAtPace(3, 15)).toBe(0);
    expect(secondsAtPace(63, 15)).toBe(240);
    expect(secondsAtPace(70, 60)).toBe(60);
  });
});
