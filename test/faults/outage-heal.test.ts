/**
 * An outage of the whole CMDB, then health: every endpoint must be fresh again within 150 s of the
 * CMDB recovering, at the default poll intervals (the license is polled hourly), while no 60 s window
 * of requests passes rateLimitPerMinute.
 *
 * The exporter starts into the outage (every endpoint, the token endpoint included, answers an HTML
 * 503), so every endpoint's first poll fails; 90 s later the faults are cleared. Before failed polls
 * were retried on their own back-off, a failed group waited for its next scheduled poll: 150 s after
 * the outage the license, connector and Action-jobs endpoints still read `cmdb_endpoint_up 0`.
 *
 * Real time: ~4 minutes per case, both cases at once; every wait is bounded.
 */
import { describe, expect, it } from 'vitest';
import type { DataEndpoint } from '../../src/api/endpoints.js';
import { enabledEndpoints } from '../../src/config/endpoints.js';
import { exampleQueries } from '../helpers/queries.js';
import { BUILTIN_SETTINGS } from '../../src/config/rules.js';
import { startSimulator } from '../../src/simulator/server.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { parseExposition, sampleValue, type ParsedExposition } from '../helpers/exposition.js';
import { watchLag } from '../helpers/lag.js';
import { busiestMinute } from './matrix.js';

const OUTAGE_MS = 90_000;
/** What the issue promises: every endpoint up again within this long after the CMDB recovered. */
const HEAL_MS = 150_000;
const SAMPLE_MS = 1_000;

const up = (m: ParsedExposition, e: DataEndpoint) => sampleValue(m, 'cmdb_endpoint_up', { endpoint: e });
const lastSuccess = (m: ParsedExposition, e: DataEndpoint) =>
  sampleValue(m, 'cmdb_endpoint_last_success_timestamp_seconds', { endpoint: e }) ?? 0;

/** Saved queries with a count (`cmdb_query_records`): a count is published only from a query that ran. */
const counted = (m: ParsedExposition) => m.samples.filter((x) => x.name === 'cmdb_query_records').length;

const OUTAGE_PAGE =
  '<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head><body><h1>503</h1><p>maintenance</p></body></html>';

describe.concurrent('outage of every endpoint for 90 s, then healthy, at the default intervals', () => {
  it.each([50, 60])(
    'rateLimitPerMinute %i: every endpoint up again within 150 s, no 60 s window above the budget',
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
      const lag = watchLag();
      const { app } = await startExporter(configFor([stack]), { serve: false, schedule: true });
      const scrape = async () => parseExposition(await app.metricsText());
      try {
        await new Promise((r) => setTimeout(r, OUTAGE_MS));
        const during = await scrape();
        // data_query sends nothing while the field metadata cannot be read: data_metadata reads down
        // for it (an alert on data_query must not fire for a metadata outage), and no count is published.
        for (const e of DATA_ENDPOINTS.filter((x) => x !== 'data_query')) expect(up(during, e), `${e} reads down during the outage`).toBe(0);
        expect(counted(during), 'saved queries counted during the outage').toBe(0);

        const clearedAt = Date.now();
        sim.clearFaults();
        const healedAt = new Map<DataEndpoint, number>();
        let last = during;
        while (healedAt.size < DATA_ENDPOINTS.length && Date.now() - clearedAt <= HEAL_MS) {
          await new Promise((r) => setTimeout(r, SAMPLE_MS));
          last = await scrape();
          for (const e of DATA_ENDPOINTS) {
            const fresh = e === 'data_query' ? counted(last) === stack.queries.length : lastSuccess(last, e) * 1000 >= clearedAt;
            if (!healedAt.has(e) && up(last, e) === 1 && fresh) healedAt.set(e, Date.now() - clearedAt);
          }
        }
        const report = DATA_ENDPOINTS.map((e) => {
          const ms = healedAt.get(e);
          return `${e}: ${ms === undefined ? `still up=${up(last, e)}` : `up after ${(ms / 1000).toFixed(1)} s`}`;
        });
        // Requests are logged as they arrive: one the exporter let go at t arrives up to the event
        // loop's longest stall later (simulator and exporter share this process), so the busiest
        // minute of sends shows as that much less than a minute of arrivals. The stall is measured.
        const stallMs = lag.maxMs();
        const busiest = busiestMinute(sim.requests(), stallMs);
        console.log(`outage at ${rate}/min: ${sim.requests().length} requests, busiest 60 s window ${busiest} (less ${stallMs.toFixed(0)} ms of event-loop stall)\n  ${report.join('\n  ')}`);
        expect(DATA_ENDPOINTS.filter((e) => !healedAt.has(e)), `endpoints not fresh ${HEAL_MS / 1000} s after the outage; ${report.join('; ')}`).toEqual([]);
        expect(busiest, 'requests in the busiest 60 s window').toBeLessThanOrEqual(rate);
      } finally {
        lag.stop();
        await app.close(1000);
        await sim.close();
      }
    },
    OUTAGE_MS + HEAL_MS + 60_000,
  );
});
