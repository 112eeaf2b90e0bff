import { isIPv4, isIPv6 } from 'node:net';
import { ConfigError } from '../errors.js';

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const FORMS = 'host:port, :port or [ipv6]:port';

/** Why `value` is not a listen address, or the parsed address. */
export function checkListenAddress(value: string): { host?: string; port: number } | string {
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
