/**
 * What the scheduler retries: StackPoller.failing(group) after a real poll against the real
 * simulator. A failure and an endpoint blocked by the one it depends on are retried on the group's
 * back-off; a 403 is not (it keeps its own long back-off, forbiddenBackoffSeconds).
 */
import { describe, expect, it } from 'vitest';
import { sim, simStack } from '../cmdb/helpers/sim.js';
import { simPoller } from './sim-poller.js';

describe('StackPoller.failing', () => {
  it('is false after a successful poll', async () => {
    const p = simPoller(simStack(await sim()));
    await p.poller.poll('license');
    expect(p.poller.failing('license')).toBe(false);
  });

  it('is true after a failed poll (503)', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 503 });
    const p = simPoller(simStack(s));
    await p.poller.poll('license');
    expect(p.status('license')).toMatchObject({ state: 'failing' });
    expect(p.poller.failing('license')).toBe(true);
  });

  it('is true for Action jobs blocked by an Action list that could not be read', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'actions', status: 500 });
    const p = simPoller(simStack(s));
    await p.poller.poll('actions');
    await p.poller.poll('actionJobs');
    expect(p.status('action_jobs')).toMatchObject({ state: 'blocked' });
    expect(p.poller.failing('actionJobs')).toBe(true);
  });

  it('is false for a 403: it waits on its own long back-off', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 403 });
    const p = simPoller(simStack(s));
    await p.poller.poll('license');
    expect(p.status('license')).toMatchObject({ state: 'forbidden' });
    expect(p.poller.failing('license')).toBe(false);
  });
});
