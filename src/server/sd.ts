/**
 * HTTP service discovery (GET /sd) for Prometheus' http_sd_configs: one target group per stack this
 * exporter polls, each scraping /metrics?stack=NAME, and one for the exporter's own metrics
 * (/metrics?only=exporter), so that no relabelling is needed (docs/scaling.md). The address is
 * --web.external-url's when given, else the listen address; one on every interface (`:9873`) is
 * shown with the host name, as Prometheus does for its own external URL.
 */
// The address rules (ScrapeBase) live with the configuration, where the backfill's default --instance reads them too.
import type { ScrapeBase } from '../config/scrape-base.js';

export interface TargetGroup {
  readonly targets: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
}

/** The /sd answer: one group per stack, sorted, then the exporter's own. */
export function targetGroups(stacks: readonly string[], base: ScrapeBase, telemetryPath: string): TargetGroup[] {
  const common = { __scheme__: base.scheme, __metrics_path__: `${base.pathPrefix}${telemetryPath}` };
  const groups: TargetGroup[] = [...stacks].sort().map((stack) => ({
    targets: [base.address],
    labels: { ...common, __param_stack: stack, stack, __meta_cmdb_exporter_target: 'stack', __meta_cmdb_exporter_stack: stack },
  }));
  groups.push({ targets: [base.address], labels: { ...common, __param_only: 'exporter', __meta_cmdb_exporter_target: 'exporter' } });
  return groups;
}
