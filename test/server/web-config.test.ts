/**
 * The exporter's server with --web.config.file, over real TLS with certificates made by openssl:
 * basic auth, plain HTTP refused on the TLS port, client certificates, certificate rotation.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type PeerCertificate, type TLSSocket } from 'node:tls';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { loadWebConfig } from '../../src/config/web-config.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { makeCa, makeCert } from '../helpers/certs.js';
import { configFor, stackFor, startExporter } from '../helpers/exporter.js';
import { notYet, waitFor } from '../helpers/wait.js';

const PASSWORD = 'correct horse battery staple';
let dir: string;
let sim: SimulatorServer;
const apps: App[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-web-'));
  makeCa(dir);
  makeCert(dir, 'server', { cn: 'first' });
  makeCert(dir, 'client', { client: true });
  sim = await startSimulator({ seed: 5 });
});

afterAll(async () => {
  for (const app of apps) await app.close(0);
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function exporterWith(webYaml: string, name: string): Promise<{ app: App; port: number; logText: () => string }> {
  const file = join(dir, `${name}.yml`);
  writeFileSync(file, webYaml);
  const { app, logText } = await startExporter(configFor([stackFor(sim, { name })], { logLevel: 'info' }), {
    serve: true,
    webConfig: loadWebConfig(file),
  });
  apps.push(app);
  return { app, port: Number(new URL(app.url ?? '').port), logText };
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  cert?: PeerCertificate;
}

function get(port: number, path: string, opts: RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, ca: readCa(), agent: false, ...opts }, (res) => {
      const chunks: Buffer[] = [];
      const cert = (res.socket as TLSSocket).getPeerCertificate();
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), cert }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

const readCa = () => readFileSync(join(dir, 'ca.crt'));
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('TLS and basic auth', () => {
  let port: number;
  let app: App;
  let logText: () => string;
  beforeAll(async () => {
    const hash = bcrypt.hashSync(PASSWORD, 4).replace(/^\$2b\$/, '$2y$'); // as htpasswd -B writes it
    ({ app, port, logText } = await exporterWith(
      `tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n  prometheus: ${hash}\n`,
      'tls',
    ));
  });

  it('serves /metrics over https to the right user, with the configured headers', async () => {
    expect(app.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const r = await get(port, '/metrics', { headers: { authorization: basic('prometheus', PASSWORD) } });
    expect(r.status).toBe(200);
    expect(r.headers['x-frame-options']).toBe('deny');
    expect(r.body).toContain('cmdb_exporter_http_requests_refused_total{reason="unauthorized"}');
    // The second request is served from the verified-credential cache: same answer.
    expect((await get(port, '/metrics', { headers: { authorization: basic('prometheus', PASSWORD) } })).status).toBe(200);
  });

  it.each([
    ['a wrong password', basic('prometheus', 'wrong')],
    ['an unknown user', basic('mallory', PASSWORD)],
    ['no credentials', undefined],
    ['a malformed header', 'Basic !!!'],
  ])('%s gets 401 with WWW-Authenticate: Basic, on every path', async (_name, authorization) => {
    for (const path of ['/metrics', '/healthz', '/']) {
      const r = await get(port, path, { headers: authorization ? { authorization } : {} });
      expect(r.status).toBe(401);
      expect(r.headers['www-authenticate']).toMatch(/^Basic /);
      expect(r.body).not.toContain(PASSWORD);
    }
  });

  it('counts refusals and never logs a password', async () => {
    // The exporter's own metrics may be up to 1 s old (SELF_METRICS_MAX_AGE_MS): scrape until they catch up.
    await waitFor(
      '12 refusals counted',
      async () => {
        const r = await get(port, '/metrics', { headers: { authorization: basic('prometheus', PASSWORD) } });
        const refused = Number(/^cmdb_exporter_http_requests_refused_total\{reason="unauthorized"\} (\d+)/m.exec(r.body)?.[1]);
        return refused >= 12 || notYet({ refused });
      },
      { intervalMs: 200 },
    );
    expect(logText()).not.toContain(PASSWORD);
  });

  it('plain HTTP to the TLS port is refused', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => resolve(`status ${res.statusCode ?? 0}`));
      req.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code ?? err.message}`));
      req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
      req.end();
    });
    expect(outcome).toMatch(/^error (ECONNRESET|EPIPE|HPE_INVALID_CONSTANT)|^status 400$/);
  });

  it('a client that does not trust the CA cannot connect', async () => {
    await expect(get(port, '/metrics', { ca: undefined })).rejects.toThrow(/self[- ]signed|unable to verify|unable to get local issuer/i);
  });

  it('picks up a renewed certificate without a restart, and keeps the old one when the new one is broken', async () => {
    expect((await get(port, '/healthz', { headers: { authorization: basic('prometheus', PASSWORD) } })).cert?.subject.CN).toBe('first');
    // A broken certificate first: the server keeps serving the old one and says so once.
    writeFileSync(join(dir, 'server.crt'), '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n');
    await waitFor('the broken certificate refused (the check runs every 5 s)', () => logText().includes('the previous certificate stays in use'));
    expect((await get(port, '/healthz', { headers: { authorization: basic('prometheus', PASSWORD) } })).cert?.subject.CN).toBe('first');
    // Then a good renewal (new key and certificate, same file names), as cert-manager writes it.
    makeCert(dir, 'renewed', { cn: 'second' });
    copyFileSync(join(dir, 'renewed.key'), join(dir, 'server.key'));
    copyFileSync(join(dir, 'renewed.crt'), join(dir, 'server.crt'));
    await waitFor('the renewed certificate reloaded (the check runs every 5 s)', () => logText().includes('reloaded'));
    const r = await get(port, '/healthz', { headers: { authorization: basic('prometheus', PASSWORD) } });
    expect(r.status).toBe(200);
    expect(r.cert?.subject.CN).toBe('second');
  });
});

describe('client certificates (RequireAndVerifyClientCert)', () => {
  let port: number;
  beforeAll(async () => {
    ({ port } = await exporterWith(
      'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n',
      'mtls',
    ));
  });

  it('refuses a client without a certificate', async () => {
    await expect(get(port, '/healthz')).rejects.toThrow(/certificate|socket hang up|ECONNRESET|alert/i);
  });

  it('serves a client with a certificate signed by the client CA', async () => {
    const r = await get(port, '/healthz', { cert: readFileSync(join(dir, 'client.crt')), key: readFileSync(join(dir, 'client.key')) });
    expect(r.status).toBe(200);
  });
});

describe('client certificates (RequireAnyClientCert)', () => {
  it('refuses the handshake without a certificate, although nothing verifies it', async () => {
    const { port } = await exporterWith(
      'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAnyClientCert\n',
      'anycert',
    );
    const closed = await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, ca: readCa() }, () => {
        socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      let data = '';
      socket.on('data', (c: Buffer) => (data += c.toString()));
      socket.on('close', () => resolve(data));
      socket.on('error', () => undefined);
      socket.setTimeout(10_000, () => socket.destroy());
    });
    expect(closed).not.toMatch(/^HTTP\/1\.1 200/);
  });
});
