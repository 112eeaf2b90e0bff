/**
 * Certificates made with the real `openssl` at test time, into a temporary directory: a CA, a
 * server certificate for 127.0.0.1/localhost signed by it, and a client certificate. EC P-256 keys,
 * so that making them takes milliseconds.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A CA: `<name>.crt` and `<name>.key` in `dir`. */
export function makeCa(dir: string, name = 'ca'): void {
  openssl(dir, ['req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${name}`]);
}

/**
 * A certificate signed by CA `ca`: `<name>.crt` and `<name>.key`. `cn` ends up in the subject, so two
 * certificates for the same names can be told apart (rotation tests).
 */
export function makeCert(dir: string, name: string, opts: { ca?: string; cn?: string; san?: string; client?: boolean } = {}): void {
  const ca = opts.ca ?? 'ca';
  const ext = join(dir, `${name}.ext`);
  writeFileSync(
    ext,
    `subjectAltName=${opts.san ?? 'IP:127.0.0.1,DNS:localhost'}\nextendedKeyUsage=${opts.client ? 'clientAuth' : 'serverAuth'}\n`,
  );
  openssl(dir, ['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${opts.cn ?? name}`]);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', ext]);
}
