/** CMDB overview: inventory, license, saved queries, connectors, data ingestion and Actions of the chosen stacks. */
import { HEALTH_COLORS, colorByName, fieldOverride, m, mj, row, stat, timeseries } from './builders.js';
import { Board, commonVariables, dashboard } from './layout.js';
import { FROM_NOW, stateCell, table } from './tables.js';
import { actionsSection, ingestionSection } from './overview-runs.js';
import { queriesSection } from './overview-queries.js';
import { MIXIN_DEFAULTS, type MixinConfig } from '../mixin.js';
import type { Dashboard } from './types.js';
import { CONNECTOR_DETAIL_UID, OVERVIEW_UID } from './uids.js';


const byStack = (metric: string) => `max by (stack) (${m(metric)})`;
const connectorKey = 'stack, connector, profile';
// ALERTS has no stack label for the exporter's own alerts: `stack=~"$stack|"` keeps them.
const ALERT_KEY = 'alertname, severity, stack, endpoint, connector, profile, action_id';

function inventory(board: Board): void {
  board.add(row('Inventory and license', 'Counts from the CMDB metrics endpoint and the license.'), 24, 1);
  for (const kind of ['assets', 'users'] as const) {
    board.add(
      timeseries({
        title: kind === 'assets' ? 'Assets' : 'Users',
        description: `Number of ${kind} against their 30-day average. More than 20% below the average fires Cmdb${kind === 'assets' ? 'Assets' : 'Users'}Dropped: look for connectors in error or without output below, then at the newest data ingestion run. A flat line means the metrics_data endpoint is failing: see the Exporter health dashboard.`,
        queries: [
          { expr: byStack(`cmdb_${kind}`), legend: `{{stack}} ${kind}` },
          { expr: byStack(`cmdb_${kind}_avg_30d`), legend: '{{stack}} 30-day average' },
        ],
        // Exact counts: `short` would round 12,345 to 12.3 K.
        unit: 'none',
        decimals: 0,
        overrides: [
          {
            matcher: { id: 'byRegexp', options: '.*30-day average' },
            properties: [{ id: 'custom.lineStyle', value: { fill: 'dash', dash: [10, 10] } }],
          },
        ],
      }),
      9,
      8,
    );
  }
  board.add(
    stat({
      title: 'License days left',
      description:
        'Days until the CMDB license expires. Orange below 30 days, red below 7, dark red once expired: renew the license with the vendor (type and customer are in the CMDB UI). No value: the license endpoint is failing, see the Exporter health dashboard.',
      queries: [{ expr: `min by (stack) (${m('cmdb_license_days_until_expiry')})`, legend: '{{stack}}' }],
      // Days, as the title says: Grafana's `d` would show 30 days as "4 week".
      unit: 'none',
      decimals: 0,
      steps: [['dark-red', null], ['red', 0], ['orange', 7], ['green', 30]],
    }),
    6,
    8,
  );
}

function connectors(board: Board): void {
  board.add(row('Connectors', 'One row per connector and profile, from its newest run.'), 24, 1);
  board.add(
    stat({
      title: 'Connector health',
      description:
        'Connectors by the normalised status of their newest run. Error or warning: find the connector in the table, open the Connector detail dashboard from its name, then read the connector log in the CMDB UI. Unknown: the CMDB sent no status.',
      queries: [
        {
          expr: `sum by (health) (max by (${connectorKey}, health) (${m('cmdb_connector_health')}))`,
          legend: '{{health}}',
        },
      ],
      unit: 'none',
      decimals: 0,
      steps: [['text', null]],
      overrides: HEALTH_COLORS.map(([health, color]) => colorByName(`^${health}$`, color)),
    }),
    6,
    8,
  );
  const detail = `/d/${CONNECTOR_DETAIL_UID}/cmdb-connector-detail?var-connector=\${__data.fields.connector}&var-profile=\${__data.fields.profile}&\${datasource:queryparam}&\${job:queryparam}&\${stack:queryparam}&\${__url_time_range}`;
  const value = (metric: string) => `max by (${connectorKey}) (${m(metric)})`;
  board.add(
    table({
      title: 'Connectors',
      description:
        'Newest run of each connector. Health error or warning, hours since the last run, no output records although there was input, or missing fields: click the connector to open the Connector detail dashboard, then check the connector in the CMDB UI (profile error message, event log).',
      labels: ['stack', 'connector', 'profile', 'health'],
      headers: { stack: 'Stack', connector: 'Connector', profile: 'Profile', health: 'Health' },
      columns: [
        { expr: `max by (${connectorKey}, health) (${m('cmdb_connector_health')} == 1)` },
        { expr: `${value('cmdb_connector_last_run_timestamp_seconds')} * 1000`, name: 'Last run', props: FROM_NOW },
        { expr: value('cmdb_connector_last_run_duration_seconds'), name: 'Duration', props: { unit: 's' } },
        { expr: value('cmdb_connector_input_records'), name: 'Input records', props: { unit: 'short' } },
        { expr: value('cmdb_connector_output_records'), name: 'Output records', props: { unit: 'short' } },
        {
          expr: value('cmdb_connector_missing_fields'),
          name: 'Missing fields',
          props: {
            'custom.cellOptions': { type: 'color-text' },
            color: { mode: 'thresholds' },
            thresholds: { mode: 'absolute', steps: [{ color: 'green', value: null }, { color: 'orange', value: 1 }] },
          },
        },
      ],
      overrides: [
        fieldOverride('Health', stateCell(HEALTH_COLORS)),
        fieldOverride('Connector', {
          links: [{ title: 'Connector detail', url: detail, targetBlank: false }],
        }),
      ],
    }),
    18,
    8,
  );
}

function alerts(board: Board): void {
  board.add(
    table({
      title: 'Firing CMDB alerts',
      description:
        'CMDB alerts firing now (needs the rules of config/prometheus loaded in Prometheus). Open the runbook_url of the alert (docs/alerts.md) for what to check. Empty while alerts fire in Alertmanager: this Prometheus does not evaluate the CMDB rules.',
      labels: ALERT_KEY.split(', '),
      headers: { alertname: 'Alert', severity: 'Severity', stack: 'Stack', endpoint: 'Endpoint', connector: 'Connector', profile: 'Profile', action_id: 'Action' },
      columns: [
        { expr: `max by (${ALERT_KEY}) (${mj('ALERTS', 'alertname=~"Cmdb.*", alertstate="firing", stack=~"$stack|"')})` },
        {
          expr: `time() - max by (${ALERT_KEY}) (${mj('ALERTS_FOR_STATE', 'alertname=~"Cmdb.*", stack=~"$stack|"')})`,
          name: 'Active for',
          props: { unit: 's' },
        },
      ],
      overrides: [fieldOverride('Severity', stateCell([['critical', 'red'], ['warning', 'orange'], ['info', 'blue']]))],
    }),
    24,
    6,
  );
}

export function overviewDashboard(mixin: MixinConfig = MIXIN_DEFAULTS): Dashboard {
  const board = new Board();
  alerts(board);
  inventory(board);
  queriesSection(board);
  connectors(board);
  ingestionSection(board);
  actionsSection(board);
  return dashboard({
    uid: OVERVIEW_UID,
    title: 'CMDB overview',
    description: 'Inventory, license, saved inventory queries, connectors, data ingestion and Actions of the CMDB, from cmdb-exporter.',
    variables: [...commonVariables(mixin)],
    panels: board.panels(),
  });
}
