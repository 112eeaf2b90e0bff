/**
 * One stack's final configuration: built-in defaults, then `defaults`, then the stack's own values;
 * then the rules that involve several keys, and the files the stack names.
 *
 * The layers are deep-merged remembering where each value came from, so that a problem found after
 * merging (a cross-field rule, an unreadable file) is reported at the key the user actually set:
 * `defaults.tls.caFile`, `stacks[2].timeoutSeconds` or `CMDB_CA_FILE`.
 */
import { isMapping } from '../api/schemas.js';
import type { StackConfig, TlsConfig } from './types.js';
import { type CredentialKey, type CredentialNaming, credentialKind, loadAuth, readPemFile } from './credentials.js';
import { formatDuration } from './durations.js';
import { type IssueList, valueAt } from './issues.js';
import { BUILTIN_SETTINGS, inTableOrder, type ResolvedSettings, SETTINGS } from './rules.js';
import type { Settings, StackInput, StackParts } from './schema.js';

export interface StackSource {
  /** The parsed declaration; undefined when it failed the schema (those problems are reported). */
  readonly input: StackInput | undefined;
  /**
   * When `input` is undefined: what is valid of the declaration all the same, so that the checks
   * across keys and of the named files report in the same round (the stack is still rejected).
   */
  readonly partial?: StackParts | undefined;
  /** Whether a credential key is set in the raw declaration, known even when parsing failed. */
  readonly has: (key: CredentialKey) => boolean;
  readonly naming: CredentialNaming;
  /** Paths for the stack's own keys, and for keys left at their built-in default. */
  readonly ownOrigin: Origin;
  readonly builtinOrigin: Origin;
}

/** Dotted key ('retries.max') → the path to report for it. */
export type Origin = (dottedKey: string) => string;

interface Layer {
  readonly values: object | undefined;
  readonly origin: Origin;
}

interface Merged<T> {
  readonly values: T;
  /** Origin the value of each leaf came from. */
  readonly origins: ReadonlyMap<string, string>;
}

function apply(
  target: Record<string, unknown>,
  source: Record<string, unknown>,
  prefix: string,
  origin: Origin,
  origins: Map<string, string>,
): void {
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    const dotted = prefix === '' ? key : `${prefix}.${key}`;
    if (isMapping(value)) {
      const existing = target[key];
      const nested: Record<string, unknown> = isMapping(existing) ? { ...existing } : {};
      apply(nested, value, dotted, origin, origins);
      target[key] = nested;
    } else {
      // Lists replace the lower layer's list: a stack's `track.assets` is its own, not added to.
      target[key] = value;
      origins.set(dotted, origin(dotted));
    }
  }
}

/** Merge layers, lowest first. The caller vouches that the result has the shape `T`. */
function mergeLayers<T>(layers: readonly Layer[]): Merged<T> {
  const values: Record<string, unknown> = {};
  const origins = new Map<string, string>();
  for (const layer of layers) {
    if (layer.values !== undefined) apply(values, layer.values as Record<string, unknown>, '', layer.origin, origins);
  }
  return { values: values as T, origins };
}

const dottedValue = (values: object | undefined, dotted: string): unknown => valueAt(values, dotted.split('.'));

/** `low` must not exceed `high`; the problem is reported at whichever of the two the user set. */
function ordered(values: ResolvedSettings, low: string, high: string, userSet: (k: string) => boolean, at: Origin, issues: IssueList): void {
  const lo = dottedValue(values, low) as number;
  const hi = dottedValue(values, high) as number;
  if (lo <= hi || issues.hasAt(at(low)) || issues.hasAt(at(high))) return;
  if (userSet(high) || !userSet(low)) {
    issues.add(at(high), `must be at least ${low} (${formatDuration(lo)}), got ${formatDuration(hi)}`);
  } else {
    issues.add(at(low), `must not exceed ${high} (${formatDuration(hi)}), got ${formatDuration(lo)}`);
  }
}

function loadTls(tls: ResolvedSettings['tls'], at: Origin, issues: IssueList): TlsConfig | undefined {
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

/** The stack's configuration, or undefined after reporting every problem found in it. */
export function buildStack(src: StackSource, defaults: Settings | undefined, issues: IssueList): StackConfig | undefined {
  const kind = credentialKind(src.has, src.naming, issues);
  const declared: StackParts | undefined = src.input ?? src.partial;
  if (declared === undefined) return undefined;
  const { name, baseUrl, clientId, secret, secretFile, token, tokenFile, ...own } = declared;
  issues.secret(secret);
  issues.secret(token);
  const merged = mergeLayers<ResolvedSettings>([
    { values: BUILTIN_SETTINGS, origin: src.builtinOrigin },
    { values: defaults, origin: (k) => `defaults.${k}` },
    { values: own, origin: src.ownOrigin },
  ]);
  const v = merged.values;
  const at: Origin = (k) => merged.origins.get(k) ?? src.builtinOrigin(k);
  const userSet = (k: string): boolean => dottedValue(own, k) !== undefined || dottedValue(defaults, k) !== undefined;
  ordered(v, 'retries.minDelaySeconds', 'retries.maxDelaySeconds', userSet, at, issues);
  ordered(v, 'connectTimeoutSeconds', 'timeoutSeconds', userSet, at, issues);
  ordered(v, 'forbiddenBackoffSeconds', 'forbiddenBackoffMaxSeconds', userSet, at, issues);
  const tls = loadTls(v.tls, at, issues);
  const auth =
    kind === undefined ? undefined : loadAuth(kind, { clientId, secret, secretFile, token, tokenFile }, v.clientIdKey, src.naming, issues);
  if (src.input === undefined || name === undefined || baseUrl === undefined || auth === undefined || tls === undefined) return undefined;
  // `tls` keeps its place in table order; its file names give way to the contents read from them.
  const { clientIdKey: _inAuth, ...settings } = inTableOrder(SETTINGS, v);
  return { name, baseUrl, auth, ...settings, tls };
}
