import { describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS, GROUPS, groupOf, type DataEndpoint, type EndpointInputs } from '../../src/api/endpoints.js';
import {
  ActionJobListSchema,
  ActionPageSchema,
  ChangeListSchema,
  ConnectorPageSchema,
  IngestionDetailSchema,
  IngestionRunListSchema,
  LicenseRecordSchema,
  MetricsRecordSchema,
  NextRunSchema,
  FieldMetadataListSchema,
} from '../../src/api/schemas.js';
import { COLLECTORS, newestRun } from '../../src/collectors/index.js';
import type { CollectorContext } from '../../src/collectors/types.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';
import type { Sample } from '../../src/metrics/sample.js';
import { collect, context, fixture, validated } from './helpers.js';

function byName<T>(file: string, schema: Parameters<typeof validated<T>>[0]) {
  return Object.entries(fixture(file) as Record<string, unknown>).map(([id, body]) => ({ id, body: validated(schema, body) }));
}

/** One realistic input per endpoint, from the fixtures, through the real schemas. */
function inputs(): EndpointInputs {
  const detail = fixture('ingestion/detail.json') as { runId: string; body: unknown };
  return {
    metrics_data: validated(MetricsRecordSchema, fixture('inventory/metrics-data.json')),
    license: validated(LicenseRecordSchema, fixture('license/license.json')),
    // history.json for connector runs; real-service.json adds merger and Action run rows.
    connector: [
      ...validated(ConnectorPageSchema, fixture('connectors/history.json')).content,
      ...validated(ConnectorPageSchema, fixture('connectors/real-service.json')).content,
    ],
    data_ingestion: validated(IngestionRunListSchema, fixture('ingestion/runs-running-end-absent.json')).data_ingestion_runs,
    data_ingestion_next: validated(NextRunSchema, fixture('ingestion/next-time.json')),
    data_ingestion_detail: { id: detail.runId, value: validated(IngestionDetailSchema, detail.body).task_list },
    actions: validated(ActionPageSchema, fixture('actions/actions.json')).actions,
    action_jobs: byName('actions/jobs.json', ActionJobListSchema).map(({ id, body }) => ({ id, value: body })),
    asset_change: byName('changes/asset.json', ChangeListSchema).map(({ id, body }) => ({ id, value: body })),
    user_change: byName('changes/user.json', ChangeListSchema).map(({ id, body }) => ({ id, value: body })),
    data_metadata: [{ id: 'asset', value: validated(FieldMetadataListSchema, fixture('queries/metadata-asset.json')).metadata }],
    data_query: [
      { id: 'edr-missing', value: { state: 'ok', records: 42, rebuiltAt: 1_714_600_000, ranAt: 1_714_600_300, previousRecords: 40, alertRiseRatio: 0.2 } },
      { id: 'misspelt', value: { state: 'refused', ranAt: 1_714_600_300 } },
    ],
  };
}

/** Families the store computes at scrape time from an endpoint's samples; no collector emits them. */
const SCRAPE_TIME = ['cmdb_license_days_until_expiry'];

/** The catalogue families of the endpoints of a poll group (asset_change and user_change share theirs). */
function groupFamilies(endpoints: readonly DataEndpoint[]): string[] {
  return CATALOGUE.filter((f) => f.endpoint !== undefined && endpoints.includes(f.endpoint)).map((f) => f.name);
}

function run(endpoint: DataEndpoint, input: EndpointInputs, ctx = context()): Sample[] {
  // The table is indexed by a runtime endpoint name, which TypeScript cannot tie to its input type.
  const collector = COLLECTORS[endpoint] as (i: unknown, c: CollectorContext) => Sample[];
  return collect(collector, input[endpoint], ctx);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

describe('collector table', () => {
  it('has one collector for every data endpoint', () => {
    expect(Object.keys(COLLECTORS).sort()).toEqual([...DATA_ENDPOINTS].sort());
    for (const e of DATA_ENDPOINTS) expect(typeof COLLECTORS[e]).toBe('function');
  });

  // What the collectors really emit, against the catalogue: a catalogued family that no collector
  // emits, or one emitted by the collectors of another group, fails here.
  it.each(Object.entries(GROUPS))('group %s: its collectors emit exactly the catalogue families of its endpoints', (_group, endpoints) => {
    const emitted = new Set(endpoints.flatMap((e) => run(e, inputs()).map((s) => s.name)));
    const catalogued = groupFamilies(endpoints).filter((name) => !SCRAPE_TIME.includes(name));
    expect([...emitted].sort()).toEqual(catalogued.sort());
  });

  it.each(DATA_ENDPOINTS.map((e) => [e]))('%s emits only families of its own group, never days-until-expiry', (endpoint) => {
    const families = groupFamilies(GROUPS[groupOf(endpoint)]);
    const samples = run(endpoint, inputs());
    expect(samples.length).toBeGreaterThan(0);
    for (const s of samples) {
      expect(families).toContain(s.name);
      expect(s.name).not.toBe('cmdb_license_days_until_expiry');
    }
  });

  it.each(DATA_ENDPOINTS.map((e) => [e]))('%s is pure: frozen input, same output on a fresh memory', (endpoint) => {
    const input = deepFreeze(inputs());
    expect(run(endpoint, input)).toEqual(run(endpoint, inputs()));
  });

  it('exports the newest-run helper the scheduler uses', () => {
    expect(newestRun(inputs().data_ingestion, 'UTC')?.id).toBe('scheduled__2024-05-03T00:00:00+00:00');
  });
});
