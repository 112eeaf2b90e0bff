/** Connector detail: one connector (and its profiles) over time. */
import { HEALTH_COLORS, colorByName, m, row, stat, stateTimeline, timeseries, valueMappings } from './builders.js';
import { Board, commonVariables, connectorVariable, dashboard, profileVariable } from './layout.js';
import { table } from './tables.js';
import { CONNECTOR_DETAIL_UID } from './uids.js';
import { MIXIN_DEFAULTS, type MixinConfig } from '../mixin.js';
import type { Dashboard } from './types.js';

const ONE = 'connector="$connector", profile=~"$profile"';
const c = (metric: string, extra = '') => m(metric, extra ? `${ONE}, ${extra}` : ONE);
const byProfile = (metric: string) => `max by (profile) (${c(metric)})`;
const CMDB_UI = 'the connector in the CMDB UI (profile error message and event log)';

function newestRun(board: Board): void {
  board.add(row('Newest run', 'The newest run of the connector, per profile.'), 24, 1);
  board.add(
    stat({
      title: 'Health',
      description: `Normalised status of the newest run. Error or warning: read ${CMDB_UI}; the exact status text is in the next panel.`,
      queries: [{ expr: `max by (profile, health) (${c('cmdb_connector_health')} == 1)`, legend: '{{profile}}: {{health}}' }],
      textMode: 'name',
      steps: [['text', null]],
      overrides: HEALTH_COLORS.map(([health, color]) => colorByName(`.*: ${health}$`, color)),
    }),
    5,
    5,
  );
  board.add(
    stat({
      title: 'Status as sent',
      description: 'Status text of the newest run exactly as the CMDB sent it. Not Success: check the profile error message in the CMDB UI.',
      queries: [{ expr: `max by (profile, status) (${c('cmdb_connector_status')} == 1)`, legend: '{{profile}}: {{status}}' }],
      textMode: 'name',
      steps: [['text', null]],
    }),
    5,
    5,
  );
  board.add(
    stat({
      title: 'Last run',
      description:
        'When the newest run of each profile was written (_time of the run row; the real service sends no start or end time on ordinary runs). A profile that looks old while another profile of the connector (often "Default profile") is recent: the service files the runs there.',
      queries: [{ expr: `${byProfile('cmdb_connector_last_run_timestamp_seconds')} * 1000`, legend: '{{profile}}' }],
      unit: 'dateTimeFromNow',
      steps: [['text', null]],
    }),
    4,
    5,
  );
  board.add(
    stat({
      title: 'Last run, any profile',
      description:
        "The newest run of the connector over all its profiles: what CmdbConnectorNotRun judges. More than 2 days ago fires it: check the connector's schedule in the CMDB UI.",
      queries: [{ expr: `max by (connector) (${c('cmdb_connector_last_run_timestamp_seconds')}) * 1000`, legend: '{{connector}}' }],
      unit: 'dateTimeFromNow',
      steps: [['text', null]],
    }),
    4,
    5,
  );
  board.add(
    table({
      title: 'Connector',
      description: 'Display name, platform and version from the newest run. A version change right before errors began is the first suspect.',
      labels: ['profile', 'display_name', 'platform', 'version'],
      headers: { profile: 'Profile', display_name: 'Display name', platform: 'Platform', version: 'Version' },
      columns: [{ expr: `max by (profile, display_name, platform, version) (${c('cmdb_connector_info')})` }],
    }),
    6,
    5,
  );
}

function overTime(board: Board): void {
  board.add(row('Over time', 'Values of the newest run as they changed over time.'), 24, 1);
  board.add(
    stateTimeline({
      title: 'Health over time',
      description: `Health of the newest run over time. Turned red or orange at some point: compare with the version and the records below, then read ${CMDB_UI}.`,
      queries: [
        {
          expr: [
            `max by (profile) (${c('cmdb_connector_health', 'health="ok"')})`,
            `+ 2 * max by (profile) (${c('cmdb_connector_health', 'health="warning"')})`,
            `+ 3 * max by (profile) (${c('cmdb_connector_health', 'health="error"')})`,
          ].join('\n'),
          legend: '{{profile}}',
        },
      ],
      mappings: valueMappings({ 0: ['unknown', 'text'], 1: ['ok', 'green'], 2: ['warning', 'orange'], 3: ['error', 'red'] }),
      steps: [['text', null]],
    }),
    24,
    5,
  );
  const series = (title: string, description: string, queries: Array<[string, string]>, unit?: string, bars?: boolean) =>
    board.add(
      timeseries({
        title,
        description,
        queries: queries.map(([expr, legend]) => ({ expr, legend })),
        ...(unit ? { unit } : {}),
        ...(bars ? { bars } : {}),
      }),
      12,
      8,
    );
  series(
    'Records in and out',
    'Records read and written by the newest run. Output 0 with input above 0 fires CmdbConnectorNoOutput: check the connector mapping and filters in the CMDB UI. A sudden drop in input: check the source system and its credentials.',
    [
      [byProfile('cmdb_connector_input_records'), '{{profile}} input'],
      [byProfile('cmdb_connector_output_records'), '{{profile}} output'],
    ],
    'short',
  );
  series(
    'Run duration',
    'Duration of the newest run. Much longer than usual: the source system is slow or returns much more data; check it and the connector log.',
    [[byProfile('cmdb_connector_last_run_duration_seconds'), '{{profile}}']],
    's',
  );
  series(
    'Fields by list',
    'Length of each field list of the newest run (expected, raw, actual input, output). Actual input below expected: the source stopped sending fields, see the missing fields panel.',
    [[`max by (profile, kind) (${c('cmdb_connector_fields')})`, '{{profile}} {{kind}}']],
    'short',
  );
  series(
    'Missing expected fields',
    'Expected input fields the newest run did not receive. Above 0 fires CmdbConnectorMissingFields: check the source schema and the permissions of the connector account.',
    [[byProfile('cmdb_connector_missing_fields'), '{{profile}}']],
    'short',
  );
  series(
    'Event messages by level',
    `Event messages of the newest run by level. ERROR messages: read them in ${CMDB_UI}; the exporter never exports their text.`,
    [[`max by (profile, level) (${c('cmdb_connector_event_messages')})`, '{{profile}} {{level}}']],
    'short',
    true,
  );
  series(
    'Time since last run',
    'Time since the newest run was written, per profile. A saw-tooth is normal; a line that keeps rising means the profile stopped running: check its schedule in the CMDB UI (the alert, after 2 days, looks at the newest run over all profiles).',
    [[`time() - ${byProfile('cmdb_connector_last_run_timestamp_seconds')}`, '{{profile}}']],
    's',
  );
}

export function connectorDetailDashboard(mixin: MixinConfig = MIXIN_DEFAULTS): Dashboard {
  const board = new Board();
  newestRun(board);
  overTime(board);
  return dashboard({
    uid: CONNECTOR_DETAIL_UID,
    title: 'CMDB connector detail',
    description: 'One CMDB connector over time: health, records, duration, fields and event messages.',
    variables: [...commonVariables(mixin), connectorVariable, profileVariable],
    panels: board.panels(),
  });
}
