/**
 * One stack's final configuration: built-in defaults, then `defaults`, then the stack's own values;
 * then the rules that involve several keys, and the files the stack names.
 */
import type { StackConfig, TlsConfig } from './types.js';
import { BUILTIN_SETTINGS, type ResolvedSettings } from './defaults.js';
import { type CredentialKey, type CredentialNaming, credentialKind, loadAuth } from './credentials.js';
import { formatDuration } from './durations.js';
import { readPemFile } from './files.js';
import type { IssueList } from './issues.js';
import { mergeLayers, type Origin } from './merge.js';
import type { Settings, StackInput } from './schema.js';

export interface StackSource {
  /** The parsed declaration; undefined when it failed the schema (those problems are reported). */
  readonly input: StackInput | undefined;
  /** Whether a credential key is set in the raw declaration, known even when parsing failed. */
  readonly has: (key: CredentialKey) => boolean;
  readonly naming: CredentialNaming;
  /** Paths for the stack's own keys, and for keys left at their built-in default. */
  readonly ownOrigin: Origin;
  readonly builtinOrigin: Origin;
}

type Where = (dottedKey: string) => string;

function valueAt(values: object | undefined, dotted: string): unknown {
  let v: unknown = values;
  for (const k of dotted.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** `low` must not exceed `high`; the problem is reported at whichever of the two the user set. */
function ordered(values: ResolvedSettings, low: string, high: string, userSet: (k: string) => boolean, at: Where, issues: IssueList): void {
  const lo = valueAt(values, low) as number;
  const hi = valueAt(values, high) as number;
  if (lo <= hi) return;
  if (userSet(high) || !userSet(low)) {
    issues.add(at(high), `must be at least ${low} (${formatDuration(lo)}), got ${formatDuration(hi)}`);
  } else {
    issues.add(at(low), `must not exceed ${high} (${formatDuration(hi)}), got ${formatDuration(lo)}`);
  }
}

function loadTls(tls: ResolvedSettings['tls'], at: Where, issues: IssueList): TlsConfig | undefined {
  let valid = true;
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    const [set, missing] = tls.certFile === undefined ? ['keyFile', 'certFile'] : ['certFile', 'keyFile'];
    issues.add(at(`tls.${set}`), `needs tls.${missing} as well: a client certificate and its key go together`);
    valid = false;
  }
  const out: { ca?: string; cert?: string; key?: string; insecureSkipVerify: boolean } = {
    insecureSkipVerify: tls.insecureSkipVerify,
  };
  const files = [
    ['caFile', 'ca', 'certificate'],
    ['certFile', 'cert', 'certificate'],
    ['keyFile', 'key', 'private key'],
  ] as const;
  for (const [fileKey, pemKey, kind] of files) {
    const file = tls[fileKey];
    if (file === undefined) continue;
    const r = readPemFile(file, kind);
    if (r.ok) out[pemKey] = r.text;
    else {
      issues.add(at(`tls.${fileKey}`), r.message);
      valid = false;
    }
  }
  issues.secret(out.key);
  return valid ? out : undefined;
}

function settingsOf(v: ResolvedSettings, tls: TlsConfig): Omit<StackConfig, 'name' | 'baseUrl' | 'auth'> {
  return {
    userAgent: v.userAgent,
    rateLimitPerMinute: v.rateLimitPerMinute,
    maxConcurrency: v.maxConcurrency,
    timeoutSeconds: v.timeoutSeconds,
    connectTimeoutSeconds: v.connectTimeoutSeconds,
    retries: { ...v.retries },
    maxResponseBytes: v.maxResponseBytes,
    tls,
    ...(v.proxyUrl === undefined ? {} : { proxyUrl: v.proxyUrl }),
    paging: { ...v.paging },
    ...(v.connectorSort === undefined ? {} : { connectorSort: v.connectorSort }),
    track: { assets: [...v.track.assets], users: [...v.track.users] },
    intervals: { ...v.intervals },
    staleIntervals: v.staleIntervals,
    forbiddenBackoffSeconds: v.forbiddenBackoffSeconds,
    forbiddenBackoffMaxSeconds: v.forbiddenBackoffMaxSeconds,
    timezone: v.timezone,
    disabledEndpoints: [...v.disabledEndpoints],
    maxSeries: v.maxSeries,
  };
}

/** The stack's configuration, or undefined after reporting every problem found in it. */
export function buildStack(src: StackSource, defaults: Settings | undefined, issues: IssueList): StackConfig | undefined {
  const kind = credentialKind(src.has, src.naming, issues);
  if (src.input === undefined) return undefined;
  const { name, baseUrl, clientId, secret, secretFile, token, tokenFile, ...own } = src.input;
  issues.secret(secret);
  issues.secret(token);
  const merged = mergeLayers<ResolvedSettings>([
    { values: BUILTIN_SETTINGS, origin: src.builtinOrigin },
    { values: defaults, origin: (k) => `defaults.${k}` },
    { values: own, origin: src.ownOrigin },
  ]);
  const v = merged.values;
  const at: Where = (k) => merged.origins.get(k) ?? src.builtinOrigin(k);
  const userSet = (k: string): boolean => valueAt(own, k) !== undefined || valueAt(defaults, k) !== undefined;
  ordered(v, 'retries.minDelaySeconds', 'retries.maxDelaySeconds', userSet, at, issues);
  ordered(v, 'connectTimeoutSeconds', 'timeoutSeconds', userSet, at, issues);
  ordered(v, 'forbiddenBackoffSeconds', 'forbiddenBackoffMaxSeconds', userSet, at, issues);
  const tls = loadTls(v.tls, at, issues);
  const auth =
    kind === undefined ? undefined : loadAuth(kind, { clientId, secret, secretFile, token, tokenFile }, v.clientIdKey, src.naming, issues);
  if (auth === undefined || tls === undefined) return undefined;
  return { name, baseUrl, auth, ...settingsOf(v, tls) };
}
