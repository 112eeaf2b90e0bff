/**
 * Golden file of the whole /metrics output (process and nodejs families excluded) for a fixed
 * simulator seed and a fixed clock. After an intended change, regenerate with
 * `npm run test:update-golden` and review the diff. `npm run test:rules` runs
 * `promtool check metrics` over the file.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';
import type { App } from '../../src/app.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { exampleQueries } from '../helpers/queries.js';

const GOLDEN = new URL('./metrics.prom', import.meta.url);
/** The clock at the first poll; the second poll, after a rebuild, is an hour later. */
const CLOCK = Date.parse('2026-11-21T12:00:00Z');

/** Families whose values are measured durations, and labels that name the machine: not reproducible. */
const VOLATILE = new Set([
  'cmdb_endpoint_request_duration_seconds',
  'cmdb_poll_duration_seconds',
  'cmdb_rate_limit_wait_seconds_total',
  // When the connector scan started: the client's own (wall) clock.
  'cmdb_connector_scan_start_timestamp_seconds',
]);

/**
 * The output without volatile families, each family's samples sorted: their order within a family is
 * the order the series were first written, which follows which request of a poll finished first (the
 * endpoints of a group are asked at once), and means nothing to Prometheus.
 */
export function normalise(text: string): string {
  const out: string[] = [];
  let samples: string[] = [];
  let skip = false;
  for (const line of text.split('\n')) {
    const family = /^# (?:HELP|TYPE) (\S+)/.exec(line)?.[1];
    if (family) {
      out.push(...samples.sort());
      samples = [];
      skip = VOLATILE.has(family) || family.startsWith('process_') || family.startsWith('nodejs_');
    }
    if (skip || line === '') continue;
    (family ? out : samples).push(line.replace(/node_version="[^"]*"/, 'node_version="NODE"'));
  }
  out.push(...samples.sort());
  return `${out.join('\n')}\n`;
}

let sim: SimulatorServer;
let app: App;
let text: string;

/** The example queries (one opted in to CmdbQueryCountRose) and one the field metadata refuses: every query family shows. */
function goldenQueries() {
  const [first, ...rest] = exampleQueries();
  if (!first) throw new Error('no example queries');
  const misspelt = { name: 'misspelt-field', table: 'asset' as const, query: [[{ searchFieldName: 'EP_Not_Instaled', operator: '==', value: 'True' }]] };
  return [{ ...first, alertRiseRatio: 0.2 }, ...rest, misspelt];
}

beforeAll(async () => {
  let clock = CLOCK;
  sim = await startSimulator({ seed: 42, now: () => clock, live: false });
  // The newest run starts out running; finish it so the next-run time (and so every family) is there.
  sim.scenario.finishIngestion('success');
  ({ app } = await startExporter(configFor([stackFor(sim, { name: 'golden', queries: goldenQueries() })]), { nowMs: () => clock }));
  expect(await app.pollOnce()).toBe(true);
  // A rebuild an hour later (intervals.queries): the saved queries count again, with the count before.
  clock += 3600_000;
  sim.scenario.rebuild();
  expect(await app.pollOnce()).toBe(true);
  text = normalise(await app.metricsText());
});

afterAll(async () => {
  await app?.close(0);
  await sim?.close();
});

describe('golden /metrics output', () => {
  it('matches test/golden/metrics.prom (regenerate with npm run test:update-golden)', () => {
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(GOLDEN, text);
    expect(existsSync(GOLDEN), 'test/golden/metrics.prom is missing: run npm run test:update-golden').toBe(true);
    expect(text).toBe(readFileSync(GOLDEN, 'utf8'));
  });

  it('holds every family of the catalogue', () => {
    for (const f of CATALOGUE) {
      if (VOLATILE.has(f.name) || f.only !== undefined) continue;
      expect(text, f.name).toMatch(new RegExp(`^${f.name}(_bucket|_sum|_count)?[{ ]`, 'm'));
    }
  });
});
