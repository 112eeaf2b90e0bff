/**
 * Every endpoint is fully described: a descriptor with a schema and a group, a collector, catalogue
 * families for its area, and a simulator route for every spelling. The compiler already demands a
 * collector (src/collectors/index.ts) and a simulator handler (src/simulator/handlers.ts) for each
 * key of ENDPOINT_TABLE; this test covers what it cannot see.
 */
import { describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS, ENDPOINT_TABLE, GROUPS, GROUP_NAMES, docPathOf, groupOf, methodOf, pathsOf } from '../../src/api/endpoints.js';
import { COLLECTORS } from '../../src/collectors/index.js';
import { CATALOGUE } from '../../src/metrics/catalogue.js';
import { route } from '../../src/simulator/routes.js';

describe.each(DATA_ENDPOINTS.map((e) => [e]))('endpoint %s', (endpoint) => {
  const d = ENDPOINT_TABLE[endpoint];

  it('has a descriptor with a schema, a group and at least one path under /CMDB/v2', () => {
    expect(typeof d.schema.safeParse).toBe('function');
    expect(GROUP_NAMES).toContain(d.group);
    expect(GROUPS[groupOf(endpoint)]).toContain(endpoint);
    const paths = pathsOf(endpoint, 'some id');
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) expect(p).toMatch(/^\/CMDB\/v2\//);
    expect(docPathOf(endpoint)).toMatch(/^\/CMDB\/v2\//);
  });

  it('has a collector, and its group feeds catalogue families', () => {
    expect(typeof COLLECTORS[endpoint]).toBe('function');
    expect(CATALOGUE.some((f) => f.endpoint !== undefined && GROUPS[groupOf(endpoint)].includes(f.endpoint))).toBe(true);
  });

  it('is routed by the simulator on every spelling', () => {
    for (const path of pathsOf(endpoint, 'an id/with:odd+chars')) {
      expect(route(path)).toMatchObject({ kind: 'cmdb', endpoint, method: methodOf(endpoint) });
    }
  });
});

describe('the data query', () => {
  it('is the one POST among the data endpoints; every other is a GET', () => {
    expect(DATA_ENDPOINTS.filter((e) => methodOf(e) === 'POST')).toEqual(['data_query']);
  });
});

describe('per-id endpoints', () => {
  it('encode the id as one path segment, so it can never change the path', () => {
    expect(pathsOf('action_jobs', '../x?y#z')).toEqual(['/CMDB/v2/system/metrics/action-jobs/..%2Fx%3Fy%23z']);
    expect(pathsOf('data_ingestion_detail', '..')).toEqual(['/CMDB/v2/system/metrics/data-ingestion/detail/%2E%2E']);
  });

  it('put a change-history id in the query, not the path', () => {
    expect(pathsOf('asset_change', 'srv/01')).toEqual(['/CMDB/v2/data/metadata/cmdb/asset/change', '/CMDB/v2/data/cmdb/asset/change']);
  });
});
