import { describe, expect, it } from 'vitest';
import { churnStep } from '../../src/simulator/churn.js';
import { parseCli } from '../../src/simulator/cli.js';
import { ConfigError } from '../../src/errors.js';
import { PATHS } from '../../src/api/endpoints.js';
import { fetchToken, get, sim } from './helpers.js';

describe('soak churn', () => {
  it('replaces entities step by step: the counts stay, the names move on', async () => {
    const s = await sim();
    const before = s.state();
    const target = { scenario: s.scenario };
    churnStep(target, 0, { entities: 2, statusTexts: false });
    churnStep(target, 1, { entities: 2, statusTexts: false });
    const after = s.state();
    expect(after.counts.connectors).toBe(before.counts.connectors + 2);
    expect(after.actionIds.length).toBe(before.actionIds.length + 2);
    expect(after.actionIds).toEqual(expect.arrayContaining(['churn-1-0', 'churn-1-1']));
    expect(after.actionIds).not.toContain('churn-0-0');
    const names = after.connectors.map((c) => c.bridgeName);
    expect(names).toEqual(expect.arrayContaining(['churn_connector_1_0', 'churn_connector_1_1']));
    expect(names).not.toContain('churn_connector_0_0');
  });

  it('gives the target connectors and Actions a new status text each step', async () => {
    const s = await sim();
    const connector = s.state().connectors[0]?.bridgeName as string;
    const actionId = s.state().actionIds[0] as string;
    churnStep({ scenario: s.scenario, connectors: [connector], actionIds: [actionId] }, 7, { entities: 0 });
    const token = await fetchToken(s);
    expect((await get(s, `${PATHS.connector()[0] as string}?size=20000`, token)).text).toContain('"status":"Error (attempt 7)"');
    expect((await get(s, PATHS.action_jobs(actionId)[0] as string, token)).text).toContain('"action_status":"FAILED_STEP_7"');
  });

  it('is set from the command line', () => {
    expect(parseCli(['--churn-ms', '500', '--churn-entities', '3', '--no-churn-status'])).toMatchObject({
      churn: { everyMs: 500, entities: 3, statusTexts: false },
    });
    expect(() => parseCli(['--churn-ms', '0'])).toThrow(ConfigError);
  });
});
