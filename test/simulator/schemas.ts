/** The client's schema for each data endpoint: what every simulator answer must pass. */
import type { z } from 'zod';
import type { DataEndpoint } from '../../src/api/endpoints.js';
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
  QueryCountSchema,
} from '../../src/api/schemas.js';

export const SCHEMAS: Record<DataEndpoint, z.ZodType> = {
  metrics_data: MetricsRecordSchema,
  license: LicenseRecordSchema,
  connector: ConnectorPageSchema,
  data_ingestion: IngestionRunListSchema,
  data_ingestion_next: NextRunSchema,
  data_ingestion_detail: IngestionDetailSchema,
  actions: ActionPageSchema,
  action_jobs: ActionJobListSchema,
  asset_change: ChangeListSchema,
  user_change: ChangeListSchema,
  data_metadata: FieldMetadataListSchema,
  data_query: QueryCountSchema,
};
