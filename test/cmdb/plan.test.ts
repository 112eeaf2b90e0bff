/** The poll plan: requests an hour from the configuration and what the client saw, against the budget. */
import { describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS } from '../../src/api/endpoints.js';
import { planFor } from '../../src/cmdb/plan.js';
import { enabledEndpoints } from '../../src/config/endpoints.js';
import { testStack } from '../helpers/stack.js';
import { makeClient } from './helpers/client.js';
import { FakeClock } from './helpers/clock.js';
import { sim, simStack } from './helpers/sim.js';

const names = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('planFor', () => {
  it('adds up the formula of docs/scaling.md at the default intervals', () => {
    const stack = testStack({ track: { assets: names(30, 'a'), users: names(20, 'u') } });
    const plan = planFor(stack, new Set(enabledEndpoints(stack)), {
      connectorPages: { incremental: 1, full: 3 },
      actionPages: 2,
      actions: 200,
      actionJobsPerHour: 870,
      ingestionDetailPerHour: 29,
    });
    const i = stack.intervals;
    expect(plan.perHour).toEqual({
      metrics_data: 3600 / i.inventory,
      license: 3600 / i.license,
      connector: 3600 / i.connectors + 2 * (3600 / stack.connectorFullScanInterval),
      data_ingestion: 3600 / i.ingestion,
      data_ingestion_next: 3600 / i.ingestion,
      data_ingestion_detail: 29,
      actions: (3600 / i.actions) * 2,
      action_jobs: 870,
      asset_change: (3600 / i.changes) * 30,
      user_change: (3600 / i.changes) * 20,
    });
    expect(plan.budgetPerHour).toBe(stack.rateLimitPerMinute * 60);
    expect(plan.ratio).toBeCloseTo(plan.total / plan.budgetPerHour, 10);
  });

  it('caps Action job fetches at actionJobsPerMinute and leaves out what is not polled', () => {
    const stack = testStack({ actionJobsPerMinute: 10 });
    const plan = planFor(stack, new Set(DATA_ENDPOINTS.filter((e) => e !== 'license')), { actionJobsPerHour: 5000 });
    expect(plan.perHour.action_jobs).toBe(600);
    expect(plan.perHour.license).toBeUndefined();
  });
});

describe('the poll plan of a client', () => {
  it('says at start, naming the stack, the demand and what to change, when the configuration cannot fit the budget', async () => {
    const s = await sim();
    // 400 tracked names every 15 minutes: 1,600 requests an hour of a budget of 600 (10 a minute).
    const stack = simStack(s, { rateLimitPerMinute: 10, track: { assets: names(400, 'asset'), users: [] } });
    const { metrics, log } = makeClient(stack, { enabled: enabledEndpoints(stack) });
    const warning = log.lines().find((l) => /poll plan/.test(String(l.msg)));
    expect(warning).toMatchObject({ level: 'warn', stack: stack.name, budgetPerHour: 600 });
    expect(warning?.msg).toMatch(/asks \d[\d,]* requests an hour of a budget of 600 .*asset_change 1600\/h.*track fewer names/);
    expect(await metrics.value('cmdb_exporter_request_demand_ratio', { stack: stack.name })).toBeGreaterThan(1);
  });

  it('publishes the ratio without a warning when the plan fits, and updates it with the Action pages and Actions it reads', async () => {
    const s = await sim();
    const stack = simStack(s);
    const { client, plan: poll, metrics, log } = makeClient(stack, { enabled: enabledEndpoints(stack), clock: new FakeClock() });
    const before = await metrics.value('cmdb_exporter_request_demand_ratio', { stack: stack.name });
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(1);
    const actions = await client.get('actions');
    const plan = (poll as NonNullable<typeof poll>).plan();
    // The test stack pages Actions 20 at a time: the list costs as many requests as it has pages.
    expect(plan.perHour.actions).toBe((3600 / stack.intervals.actions) * Math.ceil(actions.length / 20));
    expect(plan.perHour.action_jobs).toBe(actions.length * (3600 / stack.intervals.actionJobsRefresh));
    expect(await metrics.value('cmdb_exporter_request_demand_ratio', { stack: stack.name })).toBeCloseTo(plan.ratio, 2);
    expect(log.lines().filter((l) => /poll plan/.test(String(l.msg)))).toEqual([]);
  });
});
