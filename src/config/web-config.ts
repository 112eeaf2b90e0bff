/**
 * `--web.config.file`: TLS and basic authentication of the exporter's own HTTP server, in the format
 * of the Prometheus exporter-toolkit's web-config.yml, so that a file written for node_exporter works
 * here unchanged (docs/security.md has each key). Like exporter-toolkit, an unknown key or a bad value
 * stops start-up with a ConfigError naming the key. Keys Node cannot honour as such are mapped where an
 * equivalent exists (cipher_suites, curve_preferences) and reported as warnings where it does not (http2).
 * https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createSecureContext, type SecureVersion } from 'node:tls';
import { isMapping } from '../api/schemas.js';
import { errorCode } from '../errors.js';
import { describeValue, kindOf } from './checks.js';
import { readYamlMapping } from './file.js';
import { didYouMean, IssueList } from './issues.js';

export const CLIENT_AUTH_TYPES = [
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

const TLS_VERSIONS: Record<string, SecureVersion> = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' };
const VERSION_ORDER: readonly SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/** Go's cipher suite names (crypto/tls) → OpenSSL's. TLS 1.3 suites are not configurable in Go either. */
const CIPHER_SUITES: Record<string, string> = {
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
};
/** Kept whatever cipher_suites says, as Go does: TLS 1.3 suites are not configurable there. */
const TLS13_SUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';

/** Go's curve names → OpenSSL's group names. */
const CURVES: Record<string, string> = { CurveP256: 'P-256', CurveP384: 'P-384', CurveP521: 'P-521', X25519: 'X25519' };

/** The only headers exporter-toolkit lets a web config set. */
const ALLOWED_HEADERS = ['Strict-Transport-Security', 'X-Content-Type-Options', 'X-Frame-Options', 'X-XSS-Protection', 'Content-Security-Policy'];

/** bcrypt's modular crypt format: $2a$/$2b$/$2y$, cost, 53 characters of salt and hash. */
const BCRYPT = /^\$2[aby]?\$(\d\d)\$[./A-Za-z0-9]{53}$/;

export interface WebTlsConfig {
  /** Where the certificate, key and client CA come from: a file (re-read when it changes) or inline PEM. */
  readonly cert: PemSource;
  readonly key: PemSource;
  readonly clientCa?: PemSource;
  readonly clientAuthType: ClientAuthType;
  readonly clientAllowedSans: readonly string[];
  readonly minVersion: SecureVersion;
  readonly maxVersion?: SecureVersion;
  /** OpenSSL cipher list mapped from cipher_suites, TLS 1.3 suites included; undefined: Node's default. */
  readonly ciphers?: string;
  /** OpenSSL group list mapped from curve_preferences; undefined: Node's default. */
  readonly ecdhCurve?: string;
  readonly honorCipherOrder: boolean;
}

export type PemSource = { readonly file: string } | { readonly inline: string };

export interface WebConfig {
  /** The file it was read from (absolute). */
  readonly file: string;
  /** Undefined: plain HTTP. */
  readonly tls?: WebTlsConfig;
  /** user → bcrypt hash; empty: no authentication. */
  readonly basicAuthUsers: ReadonlyMap<string, string>;
  /** Response headers from http_server_config.headers. */
  readonly headers: Readonly<Record<string, string>>;
  /** Keys accepted but not honoured as such, to be logged at start-up. */
  readonly warnings: readonly string[];
}

type Tree = Record<string, unknown>;

const TOP_KEYS = ['tls_server_config', 'http_server_config', 'basic_auth_users'];
const TLS_KEYS = [
  'cert_file',
  'key_file',
  'cert',
  'key',
  'client_auth_type',
  'client_ca_file',
  'client_ca',
  'client_allowed_sans',
  'min_version',
  'max_version',
  'cipher_suites',
  'prefer_server_cipher_suites',
  'curve_preferences',
];
const HTTP_KEYS = ['http2', 'headers'];

/** The text of a PEM source (a file is read now; it throws when it cannot be read). */
function readPem(source: PemSource): string {
  return 'inline' in source ? source.inline : readFileSync(source.file, 'utf8');
}

/** The options of tls.createServer / setSecureContext for this configuration (files read now). */
export function secureContextOptions(tls: WebTlsConfig) {
  return {
    cert: readPem(tls.cert),
    key: readPem(tls.key),
    ...(tls.clientCa ? { ca: readPem(tls.clientCa) } : {}),
    minVersion: tls.minVersion,
    ...(tls.maxVersion ? { maxVersion: tls.maxVersion } : {}),
    ...(tls.ciphers ? { ciphers: tls.ciphers } : {}),
    ...(tls.ecdhCurve ? { ecdhCurve: tls.ecdhCurve } : {}),
    honorCipherOrder: tls.honorCipherOrder,
  };
}

/** Reads and validates a web-config file; throws ConfigError naming each bad key. */
export function loadWebConfig(path: string): WebConfig {
  const file = resolve(path);
  const issues = new IssueList();
  const at = (key: string) => `${file}: ${key}`;
  const tree = readYamlMapping(file, 'the web config file', issues);
  issues.throwIfAny();
  const top = (tree ?? {}) as Tree;
  unknownKeys(top, TOP_KEYS, '', issues, at);
  const warnings: string[] = [];
  const base = dirname(file);
  const tlsTree = section(top, 'tls_server_config', issues, at);
  const tls = tlsTree ? parseTls(tlsTree, base, issues, at, warnings) : undefined;
  const httpTree = section(top, 'http_server_config', issues, at);
  const headers = httpTree ? parseHttp(httpTree, issues, at, warnings) : {};
  const basicAuthUsers = parseUsers(top.basic_auth_users, issues, at);
  issues.throwIfAny();
  if (tls) checkTlsLoads(tls, issues, at);
  issues.throwIfAny();
  return { file, tls, basicAuthUsers, headers, warnings };
}

type At = (key: string) => string;

function unknownKeys(tree: Tree, known: readonly string[], prefix: string, issues: IssueList, at: At): void {
  for (const key of Object.keys(tree)) {
    if (!known.includes(key)) issues.add(at(`${prefix}${key}`), `unknown key${didYouMean(key, known)}`);
  }
}

function section(top: Tree, name: string, issues: IssueList, at: At): Tree | undefined {
  const value = top[name];
  if (value === undefined || value === null) return undefined;
  if (!isMapping(value)) {
    issues.add(at(name), `must be a mapping, got ${kindOf(value)}`);
    return undefined;
  }
  return value;
}

function str(tree: Tree, key: string, prefix: string, issues: IssueList, at: At): string | undefined {
  const value = tree[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    issues.add(at(`${prefix}${key}`), `must be a string, got ${kindOf(value)}`);
    return undefined;
  }
  return value;
}

function strList(tree: Tree, key: string, prefix: string, issues: IssueList, at: At): string[] {
  const value = tree[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
    issues.add(at(`${prefix}${key}`), `must be a list of strings, got ${describeValue(value)}`);
    return [];
  }
  return value as string[];
}

/** A file (path resolved against the web config's directory) or inline PEM; both set is an error. */
function pem(tree: Tree, fileKey: string, inlineKey: string, base: string, issues: IssueList, at: At): PemSource | undefined {
  const file = str(tree, fileKey, 'tls_server_config.', issues, at);
  const inline = str(tree, inlineKey, 'tls_server_config.', issues, at);
  if (file !== undefined && inline !== undefined) {
    issues.add(at(`tls_server_config.${fileKey}`), `give ${fileKey} or ${inlineKey}, not both`);
    return undefined;
  }
  if (inline !== undefined) return { inline };
  return file === undefined ? undefined : { file: resolve(base, file) };
}

function tlsVersion(tree: Tree, key: string, issues: IssueList, at: At): SecureVersion | undefined {
  const name = str(tree, key, 'tls_server_config.', issues, at);
  if (name === undefined) return undefined;
  const version = TLS_VERSIONS[name];
  if (!version) issues.add(at(`tls_server_config.${key}`), `unknown TLS version ${JSON.stringify(name)}; use one of ${Object.keys(TLS_VERSIONS).join(', ')}`);
  return version;
}

function parseTls(tree: Tree, base: string, issues: IssueList, at: At, warnings: string[]): WebTlsConfig | undefined {
  unknownKeys(tree, TLS_KEYS, 'tls_server_config.', issues, at);
  const cert = pem(tree, 'cert_file', 'cert', base, issues, at);
  const key = pem(tree, 'key_file', 'key', base, issues, at);
  const clientCa = pem(tree, 'client_ca_file', 'client_ca', base, issues, at);
  const authName = str(tree, 'client_auth_type', 'tls_server_config.', issues, at);
  let clientAuthType: ClientAuthType = 'NoClientCert';
  if (authName !== undefined) {
    if ((CLIENT_AUTH_TYPES as readonly string[]).includes(authName)) clientAuthType = authName as ClientAuthType;
    else issues.add(at('tls_server_config.client_auth_type'), `unknown value ${JSON.stringify(authName)}; use one of ${CLIENT_AUTH_TYPES.join(', ')}`);
  }
  // As exporter-toolkit: no certificate, key or client auth at all means plain HTTP.
  if (!cert && !key && authName === undefined && !clientCa) return undefined;
  if (!cert) issues.add(at('tls_server_config.cert_file'), 'missing: TLS needs a certificate (cert_file or cert)');
  if (!key) issues.add(at('tls_server_config.key_file'), 'missing: TLS needs a private key (key_file or key)');
  if ((clientAuthType === 'VerifyClientCertIfGiven' || clientAuthType === 'RequireAndVerifyClientCert') && !clientCa) {
    issues.add(at('tls_server_config.client_ca_file'), `missing: client_auth_type ${clientAuthType} verifies client certificates against it`);
  }
  if (clientCa && clientAuthType === 'NoClientCert') {
    issues.add(at('tls_server_config.client_ca_file'), 'set without a client_auth_type that asks for client certificates');
  }
  const clientAllowedSans = strList(tree, 'client_allowed_sans', 'tls_server_config.', issues, at);
  if (clientAllowedSans.length > 0 && clientAuthType !== 'RequireAndVerifyClientCert') {
    issues.add(at('tls_server_config.client_allowed_sans'), 'needs client_auth_type RequireAndVerifyClientCert');
  }
  const minVersion = tlsVersion(tree, 'min_version', issues, at) ?? 'TLSv1.2';
  const maxVersion = tlsVersion(tree, 'max_version', issues, at);
  if (maxVersion && VERSION_ORDER.indexOf(maxVersion) < VERSION_ORDER.indexOf(minVersion)) {
    issues.add(at('tls_server_config.max_version'), `${maxVersion} is below min_version ${minVersion}`);
  }
  const ciphers = mapped(strList(tree, 'cipher_suites', 'tls_server_config.', issues, at), CIPHER_SUITES, 'cipher_suites', issues, at);
  const curves = mapped(strList(tree, 'curve_preferences', 'tls_server_config.', issues, at), CURVES, 'curve_preferences', issues, at);
  const prefer = tree.prefer_server_cipher_suites;
  if (prefer !== undefined && prefer !== null && typeof prefer !== 'boolean') {
    issues.add(at('tls_server_config.prefer_server_cipher_suites'), `must be true or false, got ${describeValue(prefer)}`);
  }
  if (ciphers && maxVersion !== 'TLSv1.2' && VERSION_ORDER.indexOf(minVersion) <= 2) {
    warnings.push('tls_server_config.cipher_suites applies to TLS 1.2 and below; TLS 1.3 keeps its own suites (as in Go)');
  }
  if (!cert || !key) return undefined;
  return {
    cert,
    key,
    clientCa,
    clientAuthType,
    clientAllowedSans,
    minVersion,
    maxVersion,
    ciphers: ciphers ? `${TLS13_SUITES}:${ciphers.join(':')}` : undefined,
    ecdhCurve: curves?.join(':'),
    // Go ignores prefer_server_cipher_suites since 1.18 and always chooses itself; Node does when asked.
    honorCipherOrder: prefer !== false,
  };
}

function mapped(names: readonly string[], table: Record<string, string>, key: string, issues: IssueList, at: At): string[] | undefined {
  if (names.length === 0) return undefined;
  const out: string[] = [];
  for (const [i, name] of names.entries()) {
    const openssl = table[name];
    if (openssl === undefined) issues.add(at(`tls_server_config.${key}[${i}]`), `${JSON.stringify(name)} is not supported; use one of ${Object.keys(table).join(', ')}`);
    else if (!out.includes(openssl)) out.push(openssl);
  }
  return out;
}

function parseHttp(tree: Tree, issues: IssueList, at: At, warnings: string[]): Record<string, string> {
  unknownKeys(tree, HTTP_KEYS, 'http_server_config.', issues, at);
  if (tree.http2 !== undefined && tree.http2 !== null) {
    if (typeof tree.http2 !== 'boolean') issues.add(at('http_server_config.http2'), `must be true or false, got ${describeValue(tree.http2)}`);
    else if (tree.http2) warnings.push('http_server_config.http2 is accepted but ignored: the exporter serves HTTP/1.1, which Prometheus uses anyway');
  }
  const headers: Record<string, string> = {};
  const given = tree.headers;
  if (given === undefined || given === null) return headers;
  if (!isMapping(given)) {
    issues.add(at('http_server_config.headers'), `must be a mapping of header names to values, got ${kindOf(given)}`);
    return headers;
  }
  for (const [name, value] of Object.entries(given)) {
    const allowed = ALLOWED_HEADERS.find((h) => h.toLowerCase() === name.toLowerCase());
    if (!allowed) issues.add(at(`http_server_config.headers.${name}`), `this header cannot be configured; allowed: ${ALLOWED_HEADERS.join(', ')}`);
    else if (typeof value !== 'string' || /[\r\n]/.test(value)) issues.add(at(`http_server_config.headers.${name}`), 'must be a one-line string');
    else headers[allowed] = value;
  }
  return headers;
}

function parseUsers(value: unknown, issues: IssueList, at: At): Map<string, string> {
  const users = new Map<string, string>();
  if (value === undefined || value === null) return users;
  if (!isMapping(value)) {
    issues.add(at('basic_auth_users'), `must be a mapping of user names to bcrypt hashes, got ${kindOf(value)}`);
    return users;
  }
  for (const [user, hash] of Object.entries(value)) {
    // Never quote the value back: a plaintext password put here by mistake must not reach the log.
    if (user === '' || user.includes(':')) issues.add(at('basic_auth_users'), 'a user name must be non-empty and contain no ":"');
    else if (typeof hash !== 'string' || !BCRYPT.test(hash)) {
      issues.add(at(`basic_auth_users.${user}`), 'must be a bcrypt hash ($2a$, $2b$ or $2y$; e.g. made with `htpasswd -nBC 10 ""`), not a plaintext password');
    } else users.set(user, hash);
  }
  return users;
}

/** Reads the files and builds one secure context, so a wrong path or a key that does not match fails now. */
function checkTlsLoads(tls: WebTlsConfig, issues: IssueList, at: At): void {
  for (const [name, source] of [
    ['cert_file', tls.cert],
    ['key_file', tls.key],
    ['client_ca_file', tls.clientCa],
  ] as const) {
    if (!source || 'inline' in source) continue;
    try {
      readFileSync(source.file);
    } catch (err) {
      issues.add(at(`tls_server_config.${name}`), `cannot read ${source.file}: ${errorCode(err) ?? (err as Error).message}`);
    }
  }
  if (issues.hasAt(at('tls_server_config'))) return;
  try {
    createSecureContext(secureContextOptions(tls));
  } catch (err) {
    issues.add(at('tls_server_config'), `the certificate, key or client CA cannot be used: ${(err as Error).message}`);
  }
}
