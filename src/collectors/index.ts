/**
 * Every collector, one per data endpoint, each from the module of its API area: this table is the
 * only central edit when an endpoint is added, and its type fails to compile while one has none.
 */
import { collectActionJobs } from './action-jobs.js';
import { collectActions } from './actions.js';
import { collectAssetChanges, collectUserChanges } from './changes.js';
import { collectConnectors } from './connectors.js';
import { collectIngestionDetail } from './ingestion-detail.js';
import { collectIngestionNext } from './ingestion-next.js';
import { collectIngestionRuns } from './ingestion-runs.js';
import { collectMetricsData } from './inventory.js';
import { collectLicense } from './license.js';
import { collectFieldMetadata, collectQueries } from './queries.js';
import type { CollectorTable } from './types.js';

export const COLLECTORS: CollectorTable = {
  metrics_data: collectMetricsData,
  license: collectLicense,
  connector: collectConnectors,
  data_ingestion: collectIngestionRuns,
  data_ingestion_next: collectIngestionNext,
  data_ingestion_detail: collectIngestionDetail,
  actions: collectActions,
  action_jobs: collectActionJobs,
  asset_change: collectAssetChanges,
  user_change: collectUserChanges,
  data_metadata: collectFieldMetadata,
  data_query: collectQueries,
};

export { detailRun, newestRun } from './ingestion-runs.js';
export { jobStatus, newestJob } from './action-jobs.js';
export { connectorSteps } from './connectors.js';
