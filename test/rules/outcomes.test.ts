/**
 * The `outcome` values of cmdb_endpoint_requests_total that the documentation, the shipped rules and
 * their promtool tests speak of are the ones the exporter can count: an HTTP status code, or one of
 * REQUEST_OUTCOMES. A rule on an outcome that never happens never fires, and a promtool test fed
 * with one proves nothing.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { alertGroups, recordingGroups } from '../../scripts/gen-rules.js';
import { family } from '../../src/metrics/catalogue.js';
import { REQUEST_OUTCOMES } from '../../src/errors.js';
import { makeClient } from '../cmdb/helpers/client.js';
import { FakeClock } from '../cmdb/helpers/clock.js';
import { sim, simStack } from '../cmdb/helpers/sim.js';

const emitted = (value: string) => /^[1-5]\d\d$/.test(value) || (REQUEST_OUTCOMES as readonly string[]).includes(value);

/** Every outcome value a selector on cmdb_endpoint_requests_total names (`=` or the alternatives of `=~`). */
function selectedOutcomes(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/cmdb_endpoint_requests_total\{[^}]*?outcome(=~|!=|=)"([^"]*)"/g)) out.push(...(m[2] ?? '').split('|'));
  return out;
}

const rulesText = [...alertGroups(), ...recordingGroups()].flatMap((g) => g.rules.map((r) => r.expr)).join('\n');

describe('outcomes of cmdb_endpoint_requests_total', () => {
  it('the rules select only outcomes the exporter counts', () => {
    const selected = selectedOutcomes(rulesText);
    expect(selected).toContain('429');
    expect(selected.filter((v) => !emitted(v))).toEqual([]);
  });

  it('the promtool tests feed only outcomes the exporter counts', () => {
    const tests = readFileSync(new URL('../../config/prometheus/tests/exporter.yml', import.meta.url), 'utf8');
    const fed = [...tests.matchAll(/cmdb_endpoint_requests_total\{[^}]*outcome="([^"]*)"/g)].map((m) => m[1] ?? '');
    expect(fed.length).toBeGreaterThan(0);
    expect(fed.filter((v) => !emitted(v))).toEqual([]);
  });

  it('the HELP text names exactly the outcomes besides a status', () => {
    const help = family('cmdb_endpoint_requests_total').help;
    const words = [...help.matchAll(/\b[a-z]+_[a-z_]+\b|\b(?:timeout|network)\b/g)].map((m) => m[0]);
    expect(new Set(words)).toEqual(new Set(REQUEST_OUTCOMES));
  });

  it('a 429 of the CMDB is counted under the outcome CmdbRateLimited selects', async () => {
    const s = await sim();
    s.addFault({ endpoint: 'license', status: 429, retryAfterSeconds: 1, times: 1 });
    const { client, metrics } = makeClient(simStack(s), { clock: new FakeClock() });
    await client.get('license');
    const counted = Object.keys(await metrics.outcomes('license')).filter((o) => o !== '200');
    const rule = alertGroups()
      .flatMap((g) => g.rules)
      .find((r) => 'alert' in r && r.alert === 'CmdbRateLimited');
    expect(counted).toEqual(['429']);
    // A count names its selector several times (scripts/rules/model.ts counted()): one outcome all the same.
    expect([...new Set(selectedOutcomes(rule?.expr ?? ''))]).toEqual(counted);
  });
});
