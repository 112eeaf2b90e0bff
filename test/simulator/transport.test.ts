import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PATHS, TOKEN_PATH } from '../../src/api/endpoints.js';
import type { RequestRecord } from '../../src/simulator/api.js';
import { REQUEST_LOG_LIMIT, RequestLog } from '../../src/simulator/request-log.js';
import { waitFor } from '../helpers/wait.js';
import { fetchToken, get, sim } from './helpers.js';

function selfSigned(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sim-tls-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    return { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function httpsPost(url: string, ca: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method: 'POST', ca, headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('transport', () => {
  it('serves HTTPS with the given certificate, and says so in its url', async () => {
    const tls = selfSigned();
    const s = await sim({ tls });
    expect(s.url).toBe(`https://127.0.0.1:${s.port}`);
    const a = await httpsPost(`${s.url}${TOKEN_PATH}`, tls.cert, JSON.stringify({ clientID: s.clientId, secret: s.secret }));
    expect(a.status).toBe(200);
    expect(JSON.parse(a.text)).toMatchObject({ code: 200, message: 'success' });
  });

  it('listens on ::1 with a bracketed url', async () => {
    const s = await sim({ host: '::1' });
    expect(s.url).toBe(`http://[::1]:${s.port}`);
    const token = await fetchToken(s);
    expect((await get(s, PATHS.license()[0] as string, token)).status).toBe(200);
  });

  it('closes with requests still waiting on latency', async () => {
    const s = await sim();
    const token = await fetchToken(s);
    s.addFault({ endpoint: 'license', latencyMs: 60_000 });
    const pending = get(s, PATHS.license()[0] as string, token).catch((err: unknown) => err);
    await waitFor('the license request arrived', () => s.requests().some((r) => r.endpoint === 'license'));
    await s.close();
    expect(await pending).toBeInstanceOf(Error);
  });
});

describe('request log', () => {
  it(`keeps the last ${REQUEST_LOG_LIMIT} requests, oldest first`, () => {
    const log = new RequestLog();
    const record = (n: number): RequestRecord => ({ method: 'GET', rawPath: `/${n}`, rawQuery: '', endpoint: null, headers: {}, status: 404, at: n, bytes: 0 });
    for (let n = 0; n < REQUEST_LOG_LIMIT + 2500; n++) log.add(record(n));
    const list = log.list();
    expect(list).toHaveLength(REQUEST_LOG_LIMIT);
    expect(list[0]?.at).toBe(2500);
    expect(list.at(-1)?.at).toBe(REQUEST_LOG_LIMIT + 2499);
  });
});
