/**
 * Every collector, by API area. AREAS is the only central edit when an area is added: COLLECTORS
 * is built from it; the compiler checks that every data endpoint has a collector, and loading this
 * module fails if one has two.
 */
import type { DataEndpoint } from '../api/endpoints.js';
import type { CollectorTable } from './types.js';
import type { AreaInfo } from './area.js';
import { inventoryArea } from './inventory.js';
import { licenseArea } from './license.js';
import { connectorsArea } from './connectors.js';
import { ingestionArea } from './ingestion.js';
import { actionsArea } from './actions.js';
import { changesArea } from './changes.js';
import { queriesArea } from './queries.js';

const AREA_LIST = [inventoryArea, licenseArea, connectorsArea, ingestionArea, actionsArea, changesArea, queriesArea] as const;

/** Every area: its endpoints and the catalogue families they feed. */
export const AREAS: readonly AreaInfo[] = AREA_LIST;

type EndpointsOf<A> = A extends { readonly endpoints: readonly (infer E)[] } ? E : never;
type Uncovered = Exclude<DataEndpoint, EndpointsOf<(typeof AREA_LIST)[number]>>;
// Fails to compile when a data endpoint has no area (the type Uncovered then names it).
const _everyEndpointHasAnArea: [Uncovered] extends [never] ? true : Uncovered = true;

function collectorTable(): CollectorTable {
  const table: Partial<Record<DataEndpoint, unknown>> = {};
  for (const area of AREA_LIST) {
    for (const [endpoint, collector] of Object.entries(area.collectors)) {
      if (endpoint in table) throw new Error(`endpoint ${endpoint} has collectors in two areas`);
      table[endpoint as DataEndpoint] = collector;
    }
  }
  // Every key is present (checked by the compiler above) with the collector of its own area's type.
  return table as CollectorTable;
}

export const COLLECTORS: CollectorTable = collectorTable();

export type { Area, AreaInfo } from './area.js';
export type { Collector, CollectorContext, CollectorTable, EndpointInputs } from './types.js';
export { detailRun, newestRun } from './ingestion-runs.js';
export { jobStatus, newestJob } from './action-jobs.js';
export { healthOf } from './connector-run.js';
export { connectorSteps } from './connectors.js';
export { SampleSet } from './emit.js';
