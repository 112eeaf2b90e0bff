/**
 * The deliberate exceptions to the monitoring-mixin linters' rules (mixtool lint and
 * grafana/dashboard-linter), each with its reason. scripts/gen-mixin.ts writes them as the linters'
 * `.lint` file (mixin/.lint and grafana/dashboards/.lint); test/mixin/lint.test.ts fails on any other
 * finding, and on an exclusion that no longer matches one.
 */
export interface LintExclusionEntry {
  readonly dashboard?: string;
  readonly panel?: string;
  readonly alert?: string;
  readonly reason?: string;
}

export interface LintExclusion {
  readonly rule: string;
  readonly reason: string;
  readonly entries: readonly LintExclusionEntry[];
}

const DASHBOARDS = ['CMDB overview', 'CMDB connector detail', 'CMDB exporter health'];

export const LINT_EXCLUSIONS: readonly LintExclusion[] = [
  {
    rule: 'template-job-rule',
    reason:
      "The job variable keeps Grafana's default All (the list of the exporter's jobs, which the mixin's cmdbExporterSelector picks) instead of allValue '.+': with '.+' the process and up panels of the exporter health dashboard would show every target of the Prometheus. The rest of the rule (a multi-select query variable on $datasource) is held by the project's own dashboard checks.",
    entries: DASHBOARDS.map((dashboard) => ({ dashboard })),
  },
  {
    rule: 'panel-units-rule',
    reason: 'These panels show names, not quantities: a unit would apply to no value they display.',
    entries: [
      { dashboard: 'CMDB overview', panel: 'Newest run', reason: 'the status of the newest ingestion run per stack, shown by name (textMode name)' },
      { dashboard: 'CMDB connector detail', panel: 'Health', reason: 'the health of the newest run per profile, shown by name (textMode name)' },
      { dashboard: 'CMDB connector detail', panel: 'Status as sent', reason: 'the status text the CMDB sent, shown by name (textMode name)' },
      { dashboard: 'CMDB connector detail', panel: 'Connector', reason: 'a table of labels (display name, platform, version) without a value column' },
    ],
  },
];
