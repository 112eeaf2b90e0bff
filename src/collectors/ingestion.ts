/**
 * Data-ingestion area: the run list, the next run, and the task detail of the newest run.
 */
import { defineArea } from './area.js';
import { collectIngestionRuns } from './ingestion-runs.js';
import { collectIngestionNext } from './ingestion-next.js';
import { collectIngestionDetail } from './ingestion-detail.js';

export const ingestionArea = defineArea({
  name: 'ingestion',
  endpoints: ['data_ingestion', 'data_ingestion_next', 'data_ingestion_detail'],
  collectors: {
    data_ingestion: collectIngestionRuns,
    data_ingestion_next: collectIngestionNext,
    data_ingestion_detail: collectIngestionDetail,
  },
});
