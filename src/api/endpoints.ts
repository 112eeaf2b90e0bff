/**
 * The CMDB endpoints, by the names used in the `endpoint` label, and the exact paths requested.
 * This is the only list of paths: the client requests nothing else. In particular it never calls
 * GET /CMDB/v2/system/data-ingestion/run, which on the real service starts a full ingestion.
 */
export const ENDPOINTS = [
  'access_token',
  'metrics_data',
  'license',
  'connector',
  'data_ingestion',
  'data_ingestion_next',
  'data_ingestion_detail',
  'actions',
  'action_jobs',
  'asset_change',
  'user_change',
] as const;

export type EndpointName = (typeof ENDPOINTS)[number];

/** Endpoints polled for data (everything but the token endpoint). */
export type DataEndpoint = Exclude<EndpointName, 'access_token'>;
export const DATA_ENDPOINTS = ENDPOINTS.filter((e): e is DataEndpoint => e !== 'access_token');

export const BASE = '/CMDB';
export const TOKEN_PATH = `${BASE}/v1/access_token`;
const METRICS = `${BASE}/v2/system/metrics`;

/**
 * Encode one path segment so that `/`, `?`, `#`, `%` and `..` in an id can never change the path.
 * Never pass a path built from this through `new URL()`: the WHATWG parser turns `%2E%2E` back into a
 * `..` segment and resolves it away. The client sends origin and path to undici separately.
 */
export function pathSegment(id: string): string {
  const encoded = encodeURIComponent(id);
  // encodeURIComponent leaves `.` alone; a segment of only dots would be resolved away as `.`/`..`.
  return /^\.+$/.test(encoded) ? encoded.replace(/\./g, '%2E') : encoded;
}

/**
 * Path spellings per endpoint, in the order they are tried. Where the spec gives two spellings
 * (cmdb-api.md §4 notes 6 and 7), the second is tried on a 404 and the one that worked is remembered.
 */
export const PATHS = {
  metrics_data: () => [`${METRICS}/data`],
  license: () => [`${METRICS}/license`],
  connector: () => [`${METRICS}/connector`],
  data_ingestion: () => [`${METRICS}/data-ingestion`],
  // Spec note 4: the path ending in /next applies.
  data_ingestion_next: () => [`${METRICS}/data-ingestion/next`],
  // Spec note 5: singular `detail`; the run id exactly as endpoint 5 returned it.
  data_ingestion_detail: (runId: string) => [`${METRICS}/data-ingestion/detail/${pathSegment(runId)}`],
  // Spec note 6: /actions and /action.
  actions: () => [`${METRICS}/actions`, `${METRICS}/action`],
  action_jobs: (actionId: string) => [`${METRICS}/action-jobs/${pathSegment(actionId)}`],
  // Spec note 7: with `metadata` applies; the form without it is the fallback.
  asset_change: () => [`${BASE}/v2/data/metadata/cmdb/asset/change`, `${BASE}/v2/data/cmdb/asset/change`],
  user_change: () => [`${BASE}/v2/data/metadata/cmdb/user/change`, `${BASE}/v2/data/cmdb/user/change`],
} as const satisfies Record<DataEndpoint, (arg: string) => readonly string[]>;

/** Poll groups: each is one scheduler job per stack with its own interval. */
export const GROUPS = {
  inventory: ['metrics_data'],
  license: ['license'],
  connectors: ['connector'],
  ingestion: ['data_ingestion', 'data_ingestion_next', 'data_ingestion_detail'],
  actions: ['actions'],
  actionJobs: ['action_jobs'],
  changes: ['asset_change', 'user_change'],
} as const satisfies Record<string, readonly DataEndpoint[]>;

export type GroupName = keyof typeof GROUPS;
export const GROUP_NAMES = Object.keys(GROUPS) as GroupName[];

export function groupOf(endpoint: DataEndpoint): GroupName {
  for (const g of GROUP_NAMES) {
    if ((GROUPS[g] as readonly DataEndpoint[]).includes(endpoint)) return g;
  }
  throw new Error(`endpoint ${endpoint} belongs to no group`);
}
