import { describe, expect, it } from 'vitest';
import { dayKeys, formatPlan, planStack, secondsAtPace } from '../../src/backfill/plan.js';
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
    expect(plan.lines.find((l) => l.endpoint === 'action_jobs')?.more).toBe('+1 per Action');
    expect(plan.knownRequests).toBe(38);
    // The burst of 3 (15/6 rounded up) leaves at once; the other 35 at 4 s each.
    expect(plan.knownSeconds).toBe(140);
    expect(plan.secondsPerMoreRequest).toBe(4);
    expect(formatPlan(plan, { from: T0, to: T0 + 29 * 86_400 })).toContain('paced at 15 requests a minute');
  });

  it('asks nothing for saved queries and says why they are left out', () => {
    const queries = [{ name: 'q', table: 'asset' as const, query: [[{ searchFieldName: 'Asset_Type', operator: '==', value: 'Server' }]] }];
    const plan = planStack(testStack({ queries }), T0, T0 + 86_400);
    expect(plan.lines.find((l) => l.endpoint === 'data_query')).toEqual({ endpoint: 'data_query', requests: 0, more: expect.stringContaining('no "as of" date') });
    expect(formatPlan(plan, { from: T0, to: T0 + 86_400 })).toContain('saved queries are left out: the data query endpoint has no "as of" date');
    expect(planStack(testStack(), T0, T0 + 86_400).lines.map((l) => l.endpoint)).not.toContain('data_query');
  });

  it('leaves out disabled endpoints and the token request of a pre-issued token', () => {
    const stack = testStack({ auth: { kind: 'token', token: 't' }, disabledEndpoints: ['actions', 'user_change'] });
    const names = planStack(stack, T0, T0 + 3600).lines.map((l) => l.endpoint);
    expect(names).toEqual(['metrics_data', 'connector', 'data_ingestion', 'asset_change']);
  });

  it('time at the pace follows the token bucket: burst first, then one request per 60/rate seconds', () => {
    expect(secondsAtPace(3, 15)).toBe(0);
    expect(secondsAtPace(63, 15)).toBe(240);
    expect(secondsAtPace(70, 60)).toBe(60);
  });
});
