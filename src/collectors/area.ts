/** The shape of one API area: its endpoints, their collectors, and the catalogue families they feed. */
import type { DataEndpoint } from '../api/endpoints.js';
import { CATALOGUE } from '../metrics/catalogue.js';
import type { Collector } from './types.js';

export interface AreaInfo {
  readonly name: string;
  readonly endpoints: readonly DataEndpoint[];
  /**
   * Catalogue families of the area's endpoints (their `endpoint` field in the catalogue). Includes
   * families the store derives from the area's samples at scrape time (cmdb_license_days_until_expiry).
   */
  readonly families: readonly string[];
}

export interface Area<E extends DataEndpoint> extends AreaInfo {
  readonly endpoints: readonly E[];
  readonly collectors: { readonly [K in E]: Collector<K> };
}

/** An area with its families taken from the catalogue, so they are written once. */
export function defineArea<E extends DataEndpoint>(area: Omit<Area<E>, 'families'>): Area<E> {
  const families = CATALOGUE.filter((f) => f.endpoint !== undefined && area.endpoints.includes(f.endpoint as E)).map((f) => f.name);
  return { ...area, families };
}
