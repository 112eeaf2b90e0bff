/**
 * HTTP service discovery (GET /sd) for Prometheus' http_sd_configs: one target group per stack this
 * exporter polls, each scraping /metrics?stack=NAME, and one for the exporter's own metrics
 * (/metrics?only=exporter). Prometheus takes the address, scheme and path from the labels
 * `__address__` (the target), `__scheme__` and `__metrics_path__`, and the query from `__param_*`,
 * so no relabelling is needed; `stack` becomes a target label (`up{stack="…"}` per stack) and the
 * `__meta_cmdb_exporter_*` labels are there for relabelling of one's own (they are dropped after it).
 *
 * The address is --web.external-url's (a Service name, an ingress) when given, else the listen
 * address; a listen address on every interface (`:9873`) is shown with the host name, as Prometheus
 * does for its own external URL.
 */
import { hostname } from 'node:os';
import { ConfigError } from '../errors.js';

export interface TargetGroup {
  readonly targets: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
}

/** Where Prometheus reaches this exporter. */
export interface ScrapeBase {
  readonly scheme: 'http' | 'https';
  /** host:port */
  readonly address: string;
  /** A path prefix without a trailing slash (an ingress path), or ''. */
  readonly pathPrefix: string;
}

/**
 * --web.external-url (or EXPORTER_WEB_EXTERNAL_URL): an absolute http(s) URL without credentials,
 * query or fragment; a path is a prefix of every path served behind it. Throws ConfigError naming `name`.
 */
export function parseExternalUrl(text: string, name: string): ScrapeBase {
  const fail = (message: string): never => {
    throw new ConfigError([{ path: name, message }]);
  };
  const notAnUrl = `must be an absolute http(s) URL such as http://cmdb-exporter.monitoring.svc:9873, got ${JSON.stringify(text)}`;
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return fail(notAnUrl);
  }
  // `cmdb-exporter:9873` parses, as the scheme `cmdb-exporter:`.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(notAnUrl);
  if (url.username !== '' || url.password !== '') fail('must not hold a user name or password (give credentials to Prometheus, not in the URL)');
  if (url.search !== '' || url.hash !== '') fail(`must not have a query or fragment, got ${JSON.stringify(text)}`);
  const scheme = url.protocol === 'https:' ? 'https' : 'http';
  const port = url.port !== '' ? url.port : scheme === 'https' ? '443' : '80';
  return { scheme, address: `${url.hostname}:${port}`, pathPrefix: url.pathname.replace(/\/+$/, '') };
}

/** The listen address as a scrape address: a concrete host as it is, every interface as the host name. */
export function listenBase(host: string | undefined, port: number, tls: boolean, name = hostname()): ScrapeBase {
  const wildcard = host === undefined || host === '' || host === '0.0.0.0' || host === '::' || host === '[::]';
  const shown = wildcard ? name : host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return { scheme: tls ? 'https' : 'http', address: `${shown}:${port}`, pathPrefix: '' };
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
