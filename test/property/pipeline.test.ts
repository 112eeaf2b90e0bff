/**
 * Property: whatever body an endpoint answers with a 200, the way through the exporter — the real
 * client (JSON, schema, paging, path encoding of the ids it fans out over), the poller, the
 * collectors, the store and the rendered exposition — ends in a clean `success` or `invalid_body`,
 * never an internal error, and the exposition always parses (test/helpers/exposition.ts, a strict
 * reader of the text format). Bodies come from the simulator over loopback HTTP, as a 200 fault.
 *
 * PROPERTY_RUNS sets the runs per endpoint (default 200; `npm run fuzz` runs 10,000 per endpoint).
 */
import { fc, test } from '@fast-check/vitest';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS, groupOf, PATHS, type DataEndpoint, type GroupName } from '../../src/api/endpoints.js';
import { CmdbClient } from '../../src/cmdb/client.js';
import { PageReducer } from '../../src/cmdb/page-reducer.js';
import { StackReaders } from '../../src/cmdb/readers/index.js';
import { secretsOfStack } from '../../src/config/redact.js';
import type { StackConfig } from '../../src/config/types.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { enabledEndpoints, pollSettings } from '../../src/config/endpoints.js';
import { StackPoller } from '../../src/scheduler/stack-poller.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { TEXT_LINES } from '../../src/exposition/text-lines.js';
import { stackFor } from '../helpers/exporter.js';
import { exampleQueries } from '../helpers/queries.js';
import { parseExposition } from '../helpers/exposition.js';
import { captureLogger } from '../helpers/log.js';
import { hostileBody, withKey } from './bodies.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
/** PROPERTY_SEED replays a failure that vitest printed (`with seed=…`). */
const SEED = process.env.PROPERTY_SEED === undefined ? {} : { seed: Number(process.env.PROPERTY_SEED) };
const NOW_MS = Date.parse('2025-03-10T12:34:56.000Z');
/** Outcomes a hostile 200 body may have: read fine, or refused as invalid. Anything else is a defect. */
const CLEAN = new Set(['success', 'invalid_body']);
/**
 * A dependant (detail, jobs) may end in any outcome of the CMDB's answer (a 404 for an id the list
 * made up, `blocked` when the list was refused), only never in an internal `error`.
 */
const cleanFor = (e: DataEndpoint, target: DataEndpoint, outcome: string) => (e === target ? CLEAN.has(outcome) : outcome !== 'error');

let sim: SimulatorServer;
let stack: StackConfig;
let client: CmdbClient;
let instruments: ReturnType<typeof createInstruments>;
/** One page reducer (and its worker thread) for every run; the readers around it are new each run. */
let pages: PageReducer;
const log = captureLogger('info');
const valid = new Map<DataEndpoint, string>();

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, now: () => NOW_MS });
  stack = stackFor(sim, {
    name: 'prop',
    // Timeouts beyond the test's own: the property is about bodies, not about a loaded machine's
    // event-loop lag. At 30 s and 10 s, a connect or an answer that waited behind a hostile body's
    // parsing on a loaded machine ended a run in `network` or left the Action jobs `blocked`.
    timeoutSeconds: 600,
    connectTimeoutSeconds: 600,
    retries: { max: 0, minDelaySeconds: 0, maxDelaySeconds: 0, maxRetryAfterSeconds: 0 },
    // Pages of the simulator's own size (its valid bodies hold 20 runs): the connector reader caps a
    // scan at maxPages × connectorPageSize ROWS, so with 2000 a hostile 20-row body claiming many
    // pages was read 300 times a run (a few such runs took most of the test's time under load).
    // At 20, every run reads at most maxPages pages, as every other paged endpoint does.
    paging: { connectorPageSize: 20, actionPageSize: 100, maxPages: 3 },
    maxResponseBytes: 16 * 1024 * 1024,
    queries: exampleQueries(),
  });
  for (const secret of secretsOfStack(stack)) log.scrubber.add(secret);
  instruments = createInstruments(new Registry(), { defaultMetrics: false });
  client = new CmdbClient({ stack, instruments, logger: log.logger, scrubber: log.scrubber });
  pages = new PageReducer();
  // The valid body of each endpoint, as the simulator serves it (first page, first id).
  const token = ((await (await fetch(`${sim.url}/CMDB/v1/access_token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ clientID: sim.clientId, secret: sim.secret }),
  })).json()) as { data: { token: string } }).data.token;
  const state = sim.state();
  const arg: Partial<Record<DataEndpoint, string>> = {
    data_ingestion_detail: state.ingestionRunIds.at(-1),
    action_jobs: state.actionIds[0],
    data_metadata: 'asset',
  };
  // The data query is a POST: its valid body is a count's answer (the exporter's own request body).
  const count = JSON.stringify({ table: 'asset', query: [[{ searchFieldName: 'Asset_Name', operator: 'exists', type: 'String', value: null }]], paging: { page: 0, recordsPerPage: 1 } });
  for (const endpoint of DATA_ENDPOINTS) {
    const path = PATHS[endpoint](arg[endpoint])[0] as string;
    const query = endpoint === 'asset_change' ? `?id=${encodeURIComponent(state.trackedAssets[0] ?? '')}` : endpoint === 'user_change' ? `?id=${encodeURIComponent(state.trackedUsers[0] ?? '')}` : '';
    const post = endpoint === 'data_query' ? { method: 'POST', body: count } : {};
    const res = await fetch(`${sim.url}${path}${query}`, { headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, ...post });
    if (res.status !== 200) throw new Error(`${endpoint}: the simulator answered ${res.status}`);
    valid.set(endpoint, await res.text());
  }
});

afterAll(async () => {
  await client?.close();
  await pages?.close();
  await sim?.close();
});

/** The groups to poll so that the endpoint is asked: its own, after the list its ids come from, before its dependants. */
function groupsFor(endpoint: DataEndpoint): GroupName[] {
  if (endpoint === 'action_jobs') return ['actions', 'actionJobs'];
  if (endpoint === 'actions') return ['actions', 'actionJobs'];
  // Saved queries run once the connector history, which dates the rebuilds, was read.
  if (groupOf(endpoint) === 'queries') return ['connectors', 'queries'];
  return [groupOf(endpoint)];
}

/** One poll with `body` as the endpoint's answer; returns the outcomes and the exposition. */
async function pollWith(endpoint: DataEndpoint, body: string): Promise<{ outcomes: Map<DataEndpoint, string | undefined>; text: string }> {
  sim.clearFaults();
  sim.addFault({ endpoint, status: 200, body });
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger, renderer: TEXT_LINES });
  const settings = new Map(enabledEndpoints(stack).map((e) => [e, { intervalSeconds: 60, staleAfterSeconds: 180 }] as const));
  store.addStack(stack.name, settings, stack.maxSeries);
  // Fresh readers and a fresh poller each run: no cache decides that an id need not be fetched
  // again, and no connector history an earlier run (or the connector property's hostile bodies, up
  // to maxResponseBytes each) left is read, merged and rendered again by every later run.
  const readers = new StackReaders({ client, instruments, logger: log.logger, pageReducer: pages });
  const poller = new StackPoller({ stack, settings: pollSettings(stack), api: readers, store, logger: log.logger, scrubber: log.scrubber, now: () => NOW_MS / 1000 });
  try {
    for (const group of groupsFor(endpoint)) await poller.poll(group);
  } finally {
    await readers.close();
  }
  const outcomes = new Map(poller.runner.status().map((s) => [s.endpoint, s.outcome] as const));
  return { outcomes, text: new Exposition(store).text(NOW_MS / 1000) };
}

/** The check of every run: clean outcomes only, and an exposition Prometheus would accept. */
async function expectClean(endpoint: DataEndpoint, body: string): Promise<void> {
  const { outcomes, text } = await pollWith(endpoint, body);
  for (const [e, outcome] of outcomes) {
    if (outcome !== undefined) expect(cleanFor(e, endpoint, outcome), `${e} ended in ${outcome}`).toBe(true);
  }
  expect(outcomes.get(endpoint), `${endpoint} was not polled`).toBeDefined();
  // As Prometheus receives it: UTF-8 on the wire (a lone surrogate becomes U+FFFD there, and
  // two label values that differ only in one then collide as a duplicate series).
  const wire = Buffer.from(text, 'utf8').toString('utf8');
  expect(() => parseExposition(wire)).not.toThrow();
}

/** Deeper than any recursive walk survives (V8 gives ~10,000 frames); JSON.parse itself copes. */
const DEEP = { raw: '['.repeat(100_000) + ']'.repeat(100_000) };
/** For a field every row has (~70 rows): still deep, small enough that the body parses fast. */
const DEEP_EVERY_ROW = { raw: '['.repeat(20_000) + ']'.repeat(20_000) };
const LONE = { value: 'run\uD800' };

/** Hostile bodies every run meets, whatever the random ones find (issue 11, defect 7 and kin). */
const TARGETED: Array<[DataEndpoint, string, { value: unknown } | { raw: string }]> = [
  ['connector', 'expected_input_fields', DEEP],
  ['connector', 'output_fields', DEEP],
  ['connector', 'event_messages', DEEP_EVERY_ROW],
  ['connector', 'profile', DEEP],
  ['connector', 'status', LONE],
  ['data_ingestion', 'id', LONE],
  ['data_ingestion', 'status', LONE],
  ['data_ingestion_detail', 'task_id', LONE],
  ['actions', 'actionId', LONE],
  ['actions', 'actionId', { raw: '1e400' }],
  ['action_jobs', 'action_status', LONE],
  ['license', 'expireDate', { raw: '1e400' }],
  ['metrics_data', 'assetCount', { raw: '123456789012345678901234567890' }],
];

describe('targeted hostile bodies', () => {
  it.each(TARGETED.map(([e, key, r]) => [`${e}: ${key} = ${'raw' in r ? `${r.raw.slice(0, 12)}…` : JSON.stringify(r.value)}`, e, key, r] as const))(
    '%s',
    async (_name, endpoint, key, replacement) => {
      const valid_ = valid.get(endpoint) as string;
      expect(valid_).toContain(`"${key}"`);
      await expectClean(endpoint, withKey(valid_, key, replacement));
    },
    60_000,
  );
});

describe('hostile bodies through decoding, collectors, store and render', () => {
  for (const endpoint of DATA_ENDPOINTS) {
    test.prop([fc.constant(endpoint).chain((e) => hostileBody(valid.get(e) ?? 'null'))], { numRuns: RUNS, endOnFailure: true, ...SEED })(
      `${endpoint}: only success or invalid_body, and the exposition parses`,
      (body) => expectClean(endpoint, body),
      // Generous: 10,000 runs of the slowest endpoint take many minutes on a loaded machine.
      RUNS * 500,
    );
  }
});
