/** The overview's row of saved inventory queries: each count, and its change across rebuilds. */
import { m, row, timeseries, valueMappings } from './builders.js';
import type { Board } from './layout.js';
import { FROM_NOW, table } from './tables.js';

const KEY = 'stack, query';
const value = (metric: string) => `max by (${KEY}) (${m(metric)})`;
const change = `${value('cmdb_query_records')} - ${value('cmdb_query_previous_records')}`;

export function queriesSection(board: Board): void {
  board.add(
    row('Inventory queries', 'Saved queries of the exporter configuration (docs/queries.md), counted once per rebuild of the CMDB\'s data.'),
    24,
    1,
  );
  board.add(
    timeseries({
      title: 'Saved query counts',
      description:
        'Records each saved query counts (cmdb_query_records). A count moves only when the CMDB rebuilds its data (the merger runs) and holds in between. A gap: the query was refused or its last run failed (the table below and the status page say why); no series at all: no saved queries are configured.',
      queries: [{ expr: value('cmdb_query_records'), legend: '{{stack}} {{query}}' }],
      unit: 'none',
      decimals: 0,
    }),
    12,
    8,
  );
  board.add(
    timeseries({
      title: 'Change at each rebuild',
      description:
        'Each count minus the count at the rebuild before (cmdb_query_records - cmdb_query_previous_records). Above 0: the query finds more records than before the rebuild. Queries that opted in with alertRiseRatio fire CmdbQueryCountRose when the rise passes that share. No value until two rebuilds were counted since the exporter started.',
      queries: [{ expr: change, legend: '{{stack}} {{query}}' }],
      unit: 'none',
      decimals: 0,
      bars: true,
    }),
    12,
    8,
  );
  board.add(
    table({
      title: 'Saved queries',
      description:
        'One row per saved query: its count, the change since the rebuild before, when the data it was counted on was rebuilt, and its last run. Last run "failed" or "refused": the status page (/) and the exporter log name the query, the criterion and what to fix; a refused query is not sent until the configuration is fixed and reloaded.',
      labels: ['stack', 'query'],
      headers: { stack: 'Stack', query: 'Query' },
      columns: [
        { expr: value('cmdb_query_records'), name: 'Records', props: { unit: 'short', decimals: 0 } },
        { expr: change, name: 'Change since the rebuild before', props: { unit: 'short', decimals: 0 } },
        { expr: `${value('cmdb_query_data_as_of_timestamp_seconds')} * 1000`, name: 'Data as of', props: FROM_NOW },
        { expr: `${value('cmdb_query_last_run_timestamp_seconds')} * 1000`, name: 'Last run', props: FROM_NOW },
        {
          expr: `${value('cmdb_query_last_run_success')} + 2 * ${value('cmdb_query_refused')}`,
          name: 'Last run result',
          props: { mappings: valueMappings({ 0: ['failed', 'red'], 1: ['counted', 'green'], 2: ['refused', 'orange'] }) },
        },
      ],
    }),
    24,
    8,
  );
}
