/**
 * An outage of the whole CMDB, then health: every endpoint's next poll is planned within 150 s of the
 * CMDB recovering, at the default poll intervals (the license is polled hourly), and each comes back
 * fresh with it, while the budget grants no more than rateLimitPerMinute in any window.
 *
 * The exporter starts into the outage (every endpoint, the token endpoint included, answers an HTML
 * 503), so every endpoint's first poll fails; 90 s later (the outage's length: the scenario) the
 * faults are cleared. Before failed polls were retried on their own back-off, a failed group waited
 * for its next scheduled poll: 150 s after the outage the license, connector and Action-jobs
 * endpoints still read `cmdb_endpoint_up 0`. The 150 s are checked on the exporter's own plan (when
 * it will poll each group next), not on the wall clock; the test then waits for the event (every
 * endpoint fresh), bounded against a hang only, and reports how long it took.
 *
 * Real time: ~4 minutes per case, both cases at once.
 */
import { describe, expect, it } from 'vitest';
import type { DataEndpoint } from '../../src/api/endpoints.js';
import { enabledEndpoints } from '../../src/config/endpoints.js';
import { exampleQueries } from '../helpers/queries.js';
import { BUILTIN_SETTINGS } from '../../src/config/rules.js';
import { startSimulator } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue, type ParsedExposition } from '../helpers/exposition.js';
import type { GrantEvent } from '../../src/cmdb/events.js';
import type { App } from '../../src/app.js';
import { notYet, waitFor } from '../helpers/wait.js';
import { busiestMinute, grantsBreaches } from './matrix.js';

/** The outage's length: the scenario, not a wait for an event. */
const OUTAGE_MS = 90_000;
/** What the issue promises: every endpoint polled again within this long after the CMDB recovered (the exporter's plan). */
const HEAL_SECONDS = 150;

const up = (m: ParsedExposition, e: DataEndpoint) => sampleValue(m, 'cmdb_endpoint_up', { endpoint: e });
const lastSuccess = (m: ParsedExposition, e: DataEndpoint) =>
  sampleValue(m, 'cmdb_endpoint_last_success_timestamp_seconds', { endpoint: e }) ?? 0;

/** Saved queries with a count (`cmdb_query_records`): a count is published only from a query that ran. */
const counted = (m: ParsedExposition) => m.samples.filter((x) => x.name === 'cmdb_query_records').length;

const OUTAGE_PAGE =
  '<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head><body><h1>503</h1><p>maintenance</p></body></html>';

/** Each endpoint's group: polling now, or the unix second it is planned to poll next. */
function plans(app: App): Array<{ endpoint: DataEndpoint; polling: boolean; nextPollAt?: number }> {
  return (app.landing().stacks[0]?.endpoints ?? []).map((e) => ({ endpoint: e.endpoint, polling: e.pollingSince !== undefined, ...(e.nextPollAt === undefined ? {} : { nextPollAt: e.nextPollAt }) }));
}

describe.concurrent('outage of every endpoint for 90 s, then healthy, at the default intervals', () => {
  it.each([50, 60])(
    'rateLimitPerMinute %i: every endpoint planned to poll within 150 s of the recovery and fresh again, no window above the budget',
    async (rate) => {
      const sim = await startSimulator({
        faults: [{ endpoint: '*', status: 503, body: OUTAGE_PAGE, contentType: 'text/html; charset=utf-8' }],
      });
      // The defaults a user runs with (testStack shortens retries and raises the budget for unit tests).
      const stack = stackFor(sim, {
        name: `outage-${rate}`,
        rateLimitPerMinute: rate,
        actionJobsPerMinute: BUILTIN_SETTINGS.actionJobsPerMinute,
        timeoutSeconds: BUILTIN_SETTINGS.timeoutSeconds,
        connectTimeoutSeconds: BUILTIN_SETTINGS.connectTimeoutSeconds,
        retries: BUILTIN_SETTINGS.retries,
        intervals: BUILTIN_SETTINGS.intervals,
        queriesPerMinute: BUILTIN_SETTINGS.queriesPerMinute,
        // The saved queries too: their metadata and counts fail through the outage and heal after it.
        queries: exampleQueries(),
      });
      const DATA_ENDPOINTS = enabledEndpoints(stack);
      const grants: GrantEvent[] = [];
      const outageFrom = Date.now();
      const { app } = await startExporter(configFor([stack]), { serve: false, schedule: true, onRoad: (_s, events) => events.grants.on((g) => grants.push(g)) });
      const scrape = async () => parseExposition(await app.metricsText());
      try {
        // data_query sends nothing while the field metadata cannot be read: data_metadata reads down
        // for it (an alert on data_query must not fire for a metadata outage), and no count is published.
        const failing = DATA_ENDPOINTS.filter((x) => x !== 'data_query');
        await waitFor('every endpoint polled and read down in the outage', async () => {
          const m = await scrape();
          const up1 = failing.filter((e) => up(m, e) !== 0);
          return up1.length === 0 || notYet({ notDown: up1 });
        });
        // The rest of the outage.
        await new Promise((r) => setTimeout(r, Math.max(0, outageFrom + OUTAGE_MS - Date.now())));
        const during = await scrape();
        for (const e of failing) expect(up(during, e), `${e} reads down during the outage`).toBe(0);
        expect(counted(during), 'saved queries counted during the outage').toBe(0);

        const clearedAt = Date.now();
        sim.clearFaults();
        // The exporter's plan at the recovery: each group polls now, or within HEAL_SECONDS.
        const planned = plans(app);
        const late = planned.filter((p) => !p.polling && (p.nextPollAt === undefined || p.nextPollAt - clearedAt / 1000 > HEAL_SECONDS));
        expect(late, `endpoints whose next poll is planned more than ${HEAL_SECONDS} s after the recovery`).toEqual([]);

        const healedAt = new Map<DataEndpoint, number>();
        let last = during;
        const report = () =>
          DATA_ENDPOINTS.map((e) => {
            const ms = healedAt.get(e);
            return `${e}: ${ms === undefined ? `still up=${up(last, e)}` : `fresh after ${(ms / 1000).toFixed(1)} s`}`;
          });
        await waitFor(
          'every endpoint up and fresh after the recovery',
          async () => {
            last = await scrape();
            for (const e of DATA_ENDPOINTS) {
              const fresh = e === 'data_query' ? counted(last) === stack.queries.length : lastSuccess(last, e) * 1000 >= clearedAt;
              if (!healedAt.has(e) && up(last, e) === 1 && fresh) healedAt.set(e, Date.now() - clearedAt);
            }
            return healedAt.size === DATA_ENDPOINTS.length || notYet(report());
          },
          { timeoutMs: 300_000, intervalMs: 1000 },
        );
        // Read after the log: a request is granted before it arrives.
        const arrived = sim.requests().length;
        const granted = [...grants];
        console.log(`outage at ${rate}/min: ${arrived} requests, busiest 60 s ${busiestMinute(granted.map((g) => g.at))} granted\n  ${report().join('\n  ')}`);
        expect(grantsBreaches(arrived, granted, rate), 'the budget').toEqual([]);
      } finally {
        await app.close(1000);
        await sim.close();
      }
    },
    OUTAGE_MS + 300_000 + 120_000,
  );
});
