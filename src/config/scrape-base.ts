/**
 * Where Prometheus reaches this exporter, as /sd hands it out (src/server/sd.ts) and as the
 * backfill's default --instance names it: --web.external-url's host and port when given, else the
 * listen address, a listen address on every interface shown with the host name (as Prometheus does
 * for its own external URL).
 */
import { hostname } from 'node:os';
import { ConfigError } from '../errors.js';

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
