/** Checks for the values of the CMDB domain: addresses, stack names, endpoints, intervals, the listen address. */
import { isIPv4, isIPv6 } from 'node:net';
import { DATA_ENDPOINTS, type DataEndpoint } from '../api/endpoints.js';
import type { SavedQuery } from '../api/query.js';
import { parseSavedQueries } from '../api/query-shape.js';
import { ConfigError } from '../errors.js';
import { type Check, describeValue, fail, ok, text, andThen } from './checks.js';
import { intervalProblem, parseDuration } from './durations.js';
import { closest } from './issues.js';

/** Quote a URL for a message with any `user:password@` part masked. */
export function describeUrl(value: string): string {
  return describeValue(value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/?#]*@/i, '$1***@'));
}

function parseHttpUrl(raw: string): URL | undefined {
  if (!/^https?:\/\/[^/?#]/i.test(raw)) return undefined;
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

/**
 * The address before /CMDB: trailing slashes and a trailing `/CMDB` removed. Credentials, a query
 * or a fragment would be silently dropped or leaked by the client, so they are errors.
 */
export const baseUrl: Check<string> = andThen(text(), (value) => {
  const raw = value.trim();
  const url = parseHttpUrl(raw);
  if (url === undefined) return fail(`must be an http(s) URL, got ${describeUrl(raw)}`);
  if (url.username !== '' || url.password !== '') {
    return fail('must not contain credentials (user:password@); use clientId with secret or secretFile, or token');
  }
  if (raw.includes('?') || raw.includes('#')) {
    return fail(`must not have a query or fragment, got ${describeUrl(raw)}`);
  }
  let path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith('/CMDB')) path = path.slice(0, -'/CMDB'.length).replace(/\/+$/, '');
  return ok(url.origin + path);
});

/** The domains reserved for documentation (RFC 2606), the examples' https://cmdb.example.com among them. */
const EXAMPLE_DOMAINS = ['example.com', 'example.net', 'example.org'] as const;

/** A baseUrl on a documentation host is valid, but no CMDB answers there: a copied example. */
export function exampleBaseUrl(url: string): string | undefined {
  const host = parseHttpUrl(url)?.hostname.toLowerCase() ?? '';
  const domain = EXAMPLE_DOMAINS.find((d) => host === d || host.endsWith(`.${d}`));
  return domain === undefined ? undefined : `baseUrl ${url} is an example address (${domain} is reserved for documentation): no CMDB answers there; set your CMDB's address`;
}

/** An explicit proxy; `user:password@` is allowed here (redacted when the config is logged). */
export const proxyUrl: Check<string> = andThen(text(), (value) => {
  const raw = value.trim();
  return parseHttpUrl(raw) === undefined ? fail(`must be an http(s) URL, got ${describeUrl(raw)}`) : ok(raw);
});

/** A base URL that an anchor is appended to (#cmdbconnectorerror): http(s), no fragment. */
export const runbookBase: Check<string> = andThen(text(), (value) => {
  const raw = value.trim();
  if (parseHttpUrl(raw) === undefined) return fail(`must be an http(s) URL, got ${describeUrl(raw)}`);
  return raw.includes('#') ? fail(`must not have a fragment: the alert's anchor is appended, got ${describeUrl(raw)}`) : ok(raw);
});

const STACK_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

export const stackName: Check<string> = andThen(text(), (value) =>
  STACK_NAME.test(value)
    ? ok(value)
    : fail(`must start with a letter or digit and contain only letters, digits and _ . : -, got ${describeValue(value)}`),
);

/** A client secret: any non-empty text, never echoed. */
export const secretText: Check<string> = text({ secret: true });

/** A bearer token goes into a header: no spaces or control characters. Never echoed. */
export const tokenText: Check<string> = andThen(text({ secret: true }), (value) =>
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is rejected
  /[\s\u0000-\u001f\u007f]/.test(value) ? fail('must not contain spaces, line breaks or control characters') : ok(value),
);

export const filePath: Check<string> = text();

/** Header values: printable text only, so that a value can never split the header. */
export const headerText: Check<string> = andThen(text(), (value) =>
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is rejected
  /[\u0000-\u001f\u007f]/.test(value) ? fail('must not contain line breaks or control characters') : ok(value),
);

export const clientIdKey: Check<string> = andThen(text(), (value) =>
  value === 'clientID' || value === 'clientId'
    ? ok(value)
    : fail(`must be clientID or clientId (the spellings the token endpoint accepts), got ${describeValue(value)}`),
);

/** IANA zone, checked with Intl and returned in its canonical spelling ('utc' → 'UTC'). */
export const timezone: Check<string> = andThen(text(), (value) => {
  try {
    return ok(new Intl.DateTimeFormat('en-US', { timeZone: value.trim() }).resolvedOptions().timeZone);
  } catch {
    return fail(`must be an IANA time zone such as "UTC" or "Europe/Berlin", got ${describeValue(value)}`);
  }
});

export const connectorSort: Check<string> = andThen(text(), (value) =>
  /^[A-Za-z_][A-Za-z0-9_.]*,(?:asc|desc)$/.test(value.trim())
    ? ok(value.trim())
    : fail(`must be "field,asc" or "field,desc", e.g. "display_name,asc", got ${describeValue(value)}`),
);

/** A poll interval: a duration the cron scheduler can run on. */
export const interval: Check<number> = (input) => {
  const seconds = parseDuration(input);
  if (seconds === undefined) {
    return fail(`must be a duration such as "30s", "5m", "1h", "1d" or a number of seconds, got ${describeValue(input)}`);
  }
  const problem = intervalProblem(seconds);
  return problem === undefined ? ok(seconds) : fail(problem);
};

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const FORMS = 'host:port, :port or [ipv6]:port';

/** Why `value` is not a listen address, or the parsed address. */
function checkListenAddress(value: string): { host?: string; port: number } | string {
  const text = value.trim();
  const got = JSON.stringify(value);
  const colon = text.lastIndexOf(':');
  if (colon < 0) return `must be ${FORMS}, got ${got}`;
  let host = text.slice(0, colon);
  const portText = text.slice(colon + 1);
  if (host.startsWith('[') && host.endsWith(']')) {
    host = host.slice(1, -1);
    if (!isIPv6(host)) return `must be ${FORMS}; ${JSON.stringify(host)} in brackets is not an IPv6 address`;
  } else if (host.includes(':')) {
    return `must be ${FORMS}; write an IPv6 address in brackets, e.g. [::1]:9873, got ${got}`;
  } else if (host !== '' && !isIPv4(host) && !HOSTNAME.test(host)) {
    return `must be ${FORMS}; ${JSON.stringify(host)} is not a host name or IP address`;
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    return `must be ${FORMS} with a port from 0 to 65535, got ${got}`;
  }
  const port = Number(portText);
  return host === '' ? { port } : { host, port };
}

/** 'host:port', ':port', '[::1]:port' → { host?: string; port: number }; throws ConfigError on bad input. */
export function parseListenAddress(value: string, path: string): { host?: string; port: number } {
  const result = checkListenAddress(value);
  if (typeof result === 'string') throw new ConfigError([{ path, message: result }]);
  return result;
}

export const listenAddress: Check<string> = andThen(text(), (value) => {
  const parsed = checkListenAddress(value);
  return typeof parsed === 'string' ? fail(parsed) : ok(value.trim());
});

/**
 * A list of names: a YAML list, or comma-separated text (environment variables, `${VAR}`).
 * Names are trimmed; empty ones and repeats are dropped.
 */
export function nameList<T extends string = string>(check: (name: string) => string | undefined = () => undefined) {
  return ((input: unknown) => {
    const items: unknown[] | undefined = typeof input === 'string' ? input.split(',') : Array.isArray(input) ? input : undefined;
    if (items === undefined) return fail(`must be a list of names, got ${describeValue(input)}`);
    const names: T[] = [];
    for (const [i, item] of items.entries()) {
      const at = Array.isArray(input) ? [i] : undefined;
      if (typeof item !== 'string') return fail(`must be a string, got ${describeValue(item)} (quote it in YAML)`, at);
      const name = item.trim();
      const problem = name === '' ? undefined : check(name);
      if (problem !== undefined) return fail(problem, at);
      if (name !== '' && !names.includes(name as T)) names.push(name as T);
    }
    return ok(names);
  }) satisfies Check<T[]>;
}

export const endpointList = nameList<DataEndpoint>((name) => {
  if ((DATA_ENDPOINTS as readonly string[]).includes(name)) return undefined;
  const match = closest(name, DATA_ENDPOINTS);
  const hint = match === undefined ? '' : ` (did you mean "${match}"?)`;
  return `unknown endpoint ${describeValue(name)}${hint}; valid names: ${DATA_ENDPOINTS.join(', ')}`;
});

/** Saved inventory queries, checked as far as they can be without the CMDB (src/api/query-shape.ts). */
export const savedQueries: Check<SavedQuery[]> = (input) => parseSavedQueries(input);
