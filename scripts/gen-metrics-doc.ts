/**
 * Writes docs/metrics.md from src/metrics/catalogue.ts (`npm run docs:metrics`).
 * test/docs/metrics-doc.test.ts regenerates it in memory and fails when the file has drifted.
 */
import { CATALOGUE, type MetricFamily } from '../src/metrics/catalogue.js';
import { isMain, writeOrCheck } from './generated.js';

/** Text between a section's heading and its table. */
const NOTES: Record<string, string> = {
  Connectors: [
    'The endpoint returns a run history: several rows per connector profile, unsorted. One series set is kept',
    'per (`bridge_name`, profile name) from its newest row. Rows that are not connector runs share the',
    'endpoint and are kept out of every connector family, alert and dashboard panel:',
    '',
    '- `platform: "ML-ENGINE"` rows are the internal mergers ("Lucidum Asset Merger", "Lucidum User',
    '  Merger", `profile: null`) that rebuild the inventory: the `cmdb_merger_*` families, label `merger`.',
    '- `platform: "action"` rows (any case) are outbound Scheduled Action runs (`bridge_name` is the action',
    '  type, `profile` the Action\'s name): the `cmdb_action_history_*` families.',
    '',
    'The history is read in full at start and every `connectorFullScanInterval`, and incrementally',
    '(`sort=_time,desc`, newest runs only) in between: `cmdb_connector_scans_total` and',
    '`cmdb_endpoint_response_bytes_total` show what that saves.',
    '',
  ].join('\n'),
  'Saved inventory queries': [
    'One series set per saved query of the configuration (label `query`, its name), counted once per rebuild',
    'of the data (docs/queries.md). A query that is refused (it does not fit the field metadata) or whose',
    'last run failed has no `cmdb_query_records`: never the count of an earlier run. The rebuild times come',
    'from the merger rows of the connector history (`cmdb_data_as_of_timestamp_seconds`, above).',
    '',
  ].join('\n'),
};

const SECTIONS: Array<[title: string, match: (f: MetricFamily) => boolean]> = [
  ['Inventory — GET /CMDB/v2/system/metrics/data', (f) => f.endpoint === 'metrics_data'],
  ['License — GET /CMDB/v2/system/metrics/license', (f) => f.endpoint === 'license'],
  ['Connectors — GET /CMDB/v2/system/metrics/connector', (f) => f.endpoint === 'connector'],
  [
    'Data ingestion — GET …/data-ingestion, …/data-ingestion/next, …/data-ingestion/detail/<run_id>',
    (f) => f.endpoint?.startsWith('data_ingestion') ?? false,
  ],
  ['Actions — GET …/actions, …/action-jobs/<action_id>', (f) => f.endpoint === 'actions' || f.endpoint === 'action_jobs'],
  ['Change history — GET /CMDB/v2/data/metadata/cmdb/{asset,user}/change', (f) => f.endpoint === 'asset_change'],
  [
    'Saved inventory queries — POST /CMDB/v2/data/cmdb, GET /CMDB/v2/data/metadata/{asset,user}',
    (f) => f.endpoint === 'data_query' || f.endpoint === 'data_metadata',
  ],
  ['The exporter itself', (f) => f.endpoint === undefined],
];

function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

export function renderMetricsDoc(): string {
  const out: string[] = [
    '# Metrics',
    '',
    '<!-- Generated from src/metrics/catalogue.ts by `npm run docs:metrics`. Do not edit by hand. -->',
    '',
    'Every metric derived from CMDB data carries the label `stack`. State sets have one series per known',
    'state, 1 for the current state and 0 for the others. Times are unix epoch seconds. Values are polled on',
    'a schedule (see docs/design.md); a scrape never waits on the CMDB.',
    '',
  ];
  for (const [title, match] of SECTIONS) {
    out.push(`## ${title}`, '');
    const note = NOTES[title.split(' — ')[0] ?? ''];
    if (note) out.push(note);
    out.push('| metric | type | labels | description |', '|---|---|---|---|');
    for (const f of CATALOGUE.filter(match)) {
      const type = f.stateSet ? 'gauge (state set)' : f.type;
      const only = f.only === undefined ? '' : ` Served only ${f.only}.`;
      out.push(`| \`${f.name}\` | ${type} | ${f.labels.map((l) => `\`${l}\``).join(', ')} | ${cell(f.help)}${only} |`);
    }
    out.push('');
  }
  out.push(
    '## Process metrics',
    '',
    "prom-client's default metrics: `process_*` (CPU, memory, file descriptors, start time) and `nodejs_*`",
    '(event-loop lag, heap, garbage collection, active handles). They carry no `stack` label. The event-loop',
    'delay figures (`nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds`) are those of the last',
    'complete window of at least 5 s: scrapes within 5 s of each other (an HA pair of Prometheus) read the',
    "same figures, and none reads an empty window (prom-client's own reset at every scrape, so a second",
    'scrape of the same moment read a minimum of 2^63 ns and a mean of NaN).',
    '',
  );
  return out.join('\n');
}

if (isMain(import.meta.url)) {
  process.exitCode = writeOrCheck([['docs/metrics.md', renderMetricsDoc()]], { check: process.argv.includes('--check') }, 'npm run docs:metrics');
}
