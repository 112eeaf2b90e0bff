/**
 * The settings of remote write from the command line: the options of a Prometheus `remote_write`
 * section (basic auth, bearer token file, CA / client certificate and key, extra headers such as a
 * tenant id; secrets read from files), the request size and how long a request is retried.
 */
import { readFileSync } from 'node:fs';
import { parseDuration } from '../config/durations.js';
import type { FlagValues } from '../config/flags.js';

/** Headers the protocol sets; a `--remote-write.header` may not replace them (as in Prometheus). */
const RESERVED_HEADERS = new Set(['authorization', 'content-encoding', 'content-type', 'content-length', 'host', 'user-agent', 'x-prometheus-remote-write-version']);

export interface RemoteWriteSettings {
  readonly url: string;
  readonly basicAuth?: { readonly username: string; readonly password: string };
  readonly bearerToken?: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: { readonly ca?: Buffer; readonly cert?: Buffer; readonly key?: Buffer; readonly insecureSkipVerify: boolean };
  readonly timeoutSeconds: number;
  /** Samples in one request at most. */
  readonly maxSamplesPerSend: number;
  /** Seconds a request failing in a way that may pass (5xx, 429, network, timeout) is retried before giving up. */
  readonly retryForSeconds: number;
}

export const DEFAULT_MAX_SAMPLES_PER_SEND = 10_000;
export const DEFAULT_REMOTE_WRITE_TIMEOUT_SECONDS = 30;
/** Long enough for a Prometheus to restart and replay its write-ahead log; a Job's backoffLimit is not spent on it. */
export const DEFAULT_RETRY_FOR_SECONDS = 15 * 60;

export class RemoteWriteFlagError extends Error {}

/** The flags of the remote_write options (the others are not looked at). */
type RemoteWriteFlags = Partial<FlagValues<'backfill'>>;

function readPem(flag: string, path: string | undefined): Buffer | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (e) {
    throw new RemoteWriteFlagError(`${flag}: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

function readSecretFile(flag: string, path: string): string {
  return (readPem(flag, path) as Buffer).toString('utf8').trim();
}

function parseHeaders(lines: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new RemoteWriteFlagError(`--remote-write.header: ${JSON.stringify(line)} is not "Name: value"`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw new RemoteWriteFlagError(`--remote-write.header: ${name} is set by the protocol or by the auth flags and cannot be given`);
    out[name] = line.slice(colon + 1).trim();
  }
  return out;
}

/** The settings from the flags (undefined without --remote-write.url); file contents are read here. */
export function remoteWriteSettings(flags: RemoteWriteFlags): RemoteWriteSettings | undefined {
  const url = flags['remote-write.url'];
  if (url === undefined) {
    const stray = Object.entries(flags).find(([k, v]) => k.startsWith('remote-write.') && v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0));
    if (stray) throw new RemoteWriteFlagError(`--${stray[0]}: only with --remote-write.url`);
    return undefined;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RemoteWriteFlagError(`--remote-write.url: ${JSON.stringify(url)} is not a URL (e.g. http://prometheus:9090/api/v1/write)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new RemoteWriteFlagError(`--remote-write.url: must be http:// or https://, got ${parsed.protocol}`);
  if (parsed.username !== '' || parsed.password !== '') throw new RemoteWriteFlagError('--remote-write.url: give credentials with --remote-write.basic-auth.* or --remote-write.bearer-token-file, not in the URL');
  const username = flags['remote-write.basic-auth.username'];
  const passwordFile = flags['remote-write.basic-auth.password-file'];
  const tokenFile = flags['remote-write.bearer-token-file'];
  if ((username === undefined) !== (passwordFile === undefined)) throw new RemoteWriteFlagError('--remote-write.basic-auth.username and --remote-write.basic-auth.password-file go together');
  if (username !== undefined && tokenFile !== undefined) throw new RemoteWriteFlagError('--remote-write.bearer-token-file: give basic auth or a bearer token, not both');
  const certFile = flags['remote-write.tls.cert-file'];
  const keyFile = flags['remote-write.tls.key-file'];
  if ((certFile === undefined) !== (keyFile === undefined)) throw new RemoteWriteFlagError('--remote-write.tls.cert-file and --remote-write.tls.key-file go together');
  const maxText = flags['remote-write.max-samples-per-send'];
  const max = maxText === undefined ? DEFAULT_MAX_SAMPLES_PER_SEND : /^\d{1,7}$/.test(maxText) ? Number(maxText) : Number.NaN;
  if (!Number.isInteger(max) || max < 1 || max > 1_000_000) throw new RemoteWriteFlagError(`--remote-write.max-samples-per-send: a whole number from 1 to 1000000, got ${JSON.stringify(maxText)}`);
  const retryText = flags['remote-write.retry-for'];
  const retryFor = retryText === undefined ? DEFAULT_RETRY_FOR_SECONDS : parseDuration(retryText);
  if (retryFor === undefined || retryFor < 1) throw new RemoteWriteFlagError(`--remote-write.retry-for: a duration of at least 1s (e.g. 15m, 1h), got ${JSON.stringify(retryText)}`);
  return {
    url: parsed.toString(),
    ...(username !== undefined && passwordFile !== undefined ? { basicAuth: { username, password: readSecretFile('--remote-write.basic-auth.password-file', passwordFile) } } : {}),
    ...(tokenFile !== undefined ? { bearerToken: readSecretFile('--remote-write.bearer-token-file', tokenFile) } : {}),
    headers: parseHeaders(flags['remote-write.header'] ?? []),
    tls: {
      ca: readPem('--remote-write.tls.ca-file', flags['remote-write.tls.ca-file']),
      cert: readPem('--remote-write.tls.cert-file', certFile),
      key: readPem('--remote-write.tls.key-file', keyFile),
      insecureSkipVerify: flags['remote-write.tls.insecure-skip-verify'] === true,
    },
    timeoutSeconds: DEFAULT_REMOTE_WRITE_TIMEOUT_SECONDS,
    maxSamplesPerSend: max,
    retryForSeconds: retryFor,
  };
}

/** The secrets of the settings, for the scrubber. */
export function remoteWriteSecrets(s: RemoteWriteSettings | undefined): string[] {
  return [s?.basicAuth?.password, s?.bearerToken].filter((x): x is string => x !== undefined && x !== '');
}

/** The origin and path of a URL, for messages (no query: it may hold a token). */
export function shownUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}
