import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWebConfig } from '../../src/config/web-config.js';
import { ConfigError } from '../../src/errors.js';
import { makeCa, makeCert } from '../helpers/certs.js';

let dir: string;
// A bcrypt hash as htpasswd -B writes it ($2y$); the password is not needed here.
const HASH = '$2y$10$o6QGwp6jnnrXTCc7Xsp3AeTrKKZjE6uv7XQUQ7OrfN60USUWtNoYq';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-webcfg-'));
  makeCa(dir);
  makeCert(dir, 'server');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(text: string, name = 'web.yml'): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function problems(text: string): string[] {
  try {
    loadWebConfig(write(text));
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => `${i.path.slice(i.path.indexOf(': ') + 2)}: ${i.message}`);
  }
  throw new Error('expected a ConfigError');
}

describe('a web config written for node_exporter', () => {
  it('parses the exporter-toolkit example with relative paths resolved against its directory', () => {
    // The shape of exporter-toolkit's docs/web-config.yml, with this test's files.
    const file = write(`
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: "VerifyClientCertIfGiven"
  client_ca_file: ca.crt
  min_version: TLS12
  max_version: TLS13
  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]
  prefer_server_cipher_suites: true
  curve_preferences: [X25519, CurveP256]
http_server_config:
  http2: true
  headers:
    Strict-Transport-Security: max-age=31536000
    X-Frame-Options: deny
basic_auth_users:
  alice: ${HASH}
`);
    const web = loadWebConfig(file);
    expect(web.tls?.cert).toEqual({ file: join(dir, 'server.crt') });
    expect(web.tls?.clientCa).toEqual({ file: join(dir, 'ca.crt') });
    expect(web.tls?.clientAuthType).toBe('VerifyClientCertIfGiven');
    expect(web.tls?.minVersion).toBe('TLSv1.2');
    expect(web.tls?.maxVersion).toBe('TLSv1.3');
    expect(web.tls?.ciphers).toContain('ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384');
    expect(web.tls?.ecdhCurve).toBe('X25519:P-256');
    expect(web.basicAuthUsers.get('alice')).toBe(HASH);
    expect(web.headers).toEqual({ 'Strict-Transport-Security': 'max-age=31536000', 'X-Frame-Options': 'deny' });
    expect(web.warnings.join('\n')).toMatch(/http2 is accepted but ignored/);
  });

  it('an empty file, or basic auth alone, means plain HTTP', () => {
    expect(loadWebConfig(write('')).tls).toBeUndefined();
    const web = loadWebConfig(write(`basic_auth_users:\n  bob: ${HASH}\n`));
    expect(web.tls).toBeUndefined();
    expect([...web.basicAuthUsers.keys()]).toEqual(['bob']);
  });
});

describe('mistakes stop start-up with a ConfigError naming the key', () => {
  it.each([
    ['tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cert_fiel: x\n', /^tls_server_config\.cert_fiel: unknown key; did you mean "cert_file"\?/],
    ['tls_config:\n  cert_file: server.crt\n', /^tls_config: unknown key/],
    ['tls_server_config:\n  cert_file: server.crt\n', /^tls_server_config\.key_file: missing/],
    ['tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS14\n', /^tls_server_config\.min_version: unknown TLS version "TLS14"/],
    ['tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireClientCert\n', /^tls_server_config\.client_auth_type: unknown value/],
    ['tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n', /^tls_server_config\.client_ca_file: missing/],
    ['tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cipher_suites: [TLS_FANCY]\n', /^tls_server_config\.cipher_suites\[0\]: "TLS_FANCY" is not supported/],
    ['tls_server_config:\n  cert_file: nowhere.crt\n  key_file: server.key\n', /^tls_server_config\.cert_file: cannot read .*nowhere\.crt: ENOENT/],
    ['tls_server_config:\n  cert_file: ca.crt\n  key_file: server.key\n', /^tls_server_config: the certificate, key or client CA cannot be used/],
    ['http_server_config:\n  headers:\n    Set-Cookie: a=b\n', /^http_server_config\.headers\.Set-Cookie: this header cannot be configured/],
    ['http_server_config:\n  http3: true\n', /^http_server_config\.http3: unknown key/],
  ])('%s', (text, expected) => {
    expect(problems(text).join('\n')).toMatch(expected);
  });

  it('a plaintext password in basic_auth_users is refused without being quoted back', () => {
    const found = problems('basic_auth_users:\n  alice: hunter2-plaintext\n');
    expect(found.join('\n')).toMatch(/^basic_auth_users\.alice: must be a bcrypt hash/);
    expect(found.join('\n')).not.toContain('hunter2-plaintext');
  });

  it('a file that does not exist', () => {
    expect(() => loadWebConfig(join(dir, 'missing.yml'))).toThrow(/cannot read the web config file: ENOENT/);
  });
});
