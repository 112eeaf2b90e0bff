/** The shape of one API area: its endpoints, their collectors and the catalogue families they feed. */
import type { DataEndpoint } from '../api/endpoints.js';
import { family } from '../metrics/catalogue.js';
import type { Collector } from './types.js';

export interface AreaInfo {
  readonly name: string;
  readonly endpoints: readonly DataEndpoint[];
  /**
   * Catalogue families of the area's endpoints. Includes families the store derives from the
   * area's samples at scrape time (cmdb_license_days_until_expiry), which no collector emits.
   */
  readonly families: readonly string[];
}

export interface Area<E extends DataEndpoint> extends AreaInfo {
  readonly endpoints: readonly E[];
  readonly collectors: { readonly [K in E]: Collector<K> };
}

/** Checks at import time that every family name is in the catalogue (a typo fails start-up and every test). */
export function defineArea<E extends DataEndpoint>(area: Area<E>): Area<E> {
  for (const name of area.families) family(name);
  return area;
}
