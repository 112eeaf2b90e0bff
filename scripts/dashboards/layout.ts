/** Places panels on the 24-column grid, numbers them, and wraps them in a dashboard. */
import type { MixinConfig } from '../mixin.js';
import { joinMatchers } from '../jsonnet/symbolic.js';
import { DS, INSTANCE, JOB, STACK } from './builders.js';
import type { Dashboard, Panel, PanelDraft, Variable } from './types.js';

const GRID_WIDTH = 24;

/** Panels are added left to right; a panel that does not fit, or a row, starts a new line. */
export class Board {
  private readonly placed: Panel[] = [];
  private x = 0;
  private y = 0;
  private lineHeight = 0;

  add(draft: PanelDraft, w: number, h: number): this {
    if (draft.type === 'row' || this.x + w > GRID_WIDTH) this.newLine();
    this.placed.push({ id: this.placed.length + 1, gridPos: { h, w, x: this.x, y: this.y }, ...draft });
    this.x += w;
    this.lineHeight = Math.max(this.lineHeight, h);
    if (draft.type === 'row') this.newLine();
    return this;
  }

  panels(): Panel[] {
    return [...this.placed];
  }

  private newLine(): void {
    this.y += this.lineHeight;
    this.x = 0;
    this.lineHeight = 0;
  }
}

const ALL = { selected: true, text: ['All'], value: ['$__all'] };

export const datasourceVariable: Variable = {
  name: 'datasource',
  label: 'Data source',
  type: 'datasource',
  query: 'prometheus',
  description: 'The Prometheus that scrapes cmdb-exporter.',
  multi: false,
  includeAll: false,
  options: [],
  refresh: 1,
  regex: '',
  hide: 0,
};

export function queryVariable(
  name: string,
  label: string,
  query: string,
  description: string,
  opts: { multi?: boolean; allValue?: string } = {},
): Variable {
  const multi = opts.multi ?? true;
  return {
    name,
    label,
    type: 'query',
    query,
    description,
    datasource: DS,
    multi,
    includeAll: multi,
    ...(opts.allValue !== undefined ? { allValue: opts.allValue } : {}),
    // Nothing selected: Grafana picks the first value (the schema's VariableOption needs a text and value).
    ...(multi ? { current: ALL } : {}),
    options: [],
    refresh: 2,
    regex: '',
    sort: 1,
    hide: 0,
  };
}

/** `{a, b}` of the non-empty matchers. */
const braces = (...matchers: string[]) => `{${joinMatchers(matchers)}}`;

/**
 * The variables every dashboard starts with. The mixin's job and stack selectors limit what the
 * `job` and `stack` variables offer (and so what All means); queries then match the variables.
 */
export function commonVariables(mixin: MixinConfig): Variable[] {
  return [
    queryVariable(
      'job',
      'Job',
      `label_values(cmdb_exporter_build_info${braces(mixin.jobSelector)}, job)`,
      'Scrape job(s) of cmdb-exporter.',
    ),
    queryVariable(
      'instance',
      'Instance',
      `label_values(cmdb_exporter_build_info{${JOB}}, instance)`,
      'Exporter process(es) of the job: with sharded replicas, one per shard.',
      // Every query also matches job=~"$job", so All may match any instance (dashboard-linter's
      // template-instance-rule). The job variable keeps its list of values: `.+` there would show
      // every target of the Prometheus in the process and `up` panels.
      { allValue: '.+' },
    ),
    queryVariable(
      'stack',
      'Stack',
      `label_values(cmdb_endpoint_up${braces(JOB, INSTANCE, mixin.stackSelector)}, stack)`,
      'CMDB instance(s), as configured in the exporter.',
    ),
  ];
}

export const connectorVariable = queryVariable(
  'connector',
  'Connector',
  `label_values(cmdb_connector_info{${JOB}, ${INSTANCE}, ${STACK}}, connector)`,
  'Technical connector name (bridge_name).',
  { multi: false },
);

export const profileVariable = queryVariable(
  'profile',
  'Profile',
  `label_values(cmdb_connector_info{${JOB}, ${INSTANCE}, ${STACK}, connector="$connector"}, profile)`,
  'Connector profile; All also matches runs without a profile.',
  // `.*` rather than the list of values, so that internal merger rows without a profile match too.
  { allValue: '.*' },
);

export interface DashboardSpec {
  readonly uid: string;
  readonly title: string;
  readonly description: string;
  readonly variables: readonly Variable[];
  readonly panels: readonly Panel[];
}

export function dashboard(spec: DashboardSpec): Dashboard {
  return {
    uid: spec.uid,
    title: spec.title,
    description: spec.description,
    tags: ['cmdb', 'cmdb-exporter'],
    // Provisioned dashboards are not edited in place (dashboard-linter's uneditable-dashboard):
    // change the generator, or save a copy in Grafana.
    editable: false,
    graphTooltip: 1,
    refresh: '1m',
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-24h', to: 'now' },
    timezone: 'browser',
    annotations: { list: [] },
    links: [
      {
        type: 'dashboards',
        title: 'CMDB dashboards',
        tags: ['cmdb'],
        asDropdown: true,
        includeVars: true,
        keepTime: true,
        icon: 'external link',
        targetBlank: false,
        tooltip: '',
        url: '',
      },
    ],
    templating: { list: [datasourceVariable, ...spec.variables] },
    panels: spec.panels,
  };
}
