/** The simulator compresses only when asked and when switched on; both framings decode to the same body. */
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { acceptsGzip } from '../../src/simulator/http-io.js';
import type { Compression } from '../../src/simulator/api.js';

const sims: SimulatorServer[] = [];
afterEach(async () => {
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

async function start(compression?: Compression): Promise<SimulatorServer> {
  const s = await startSimulator({ host: '127.0.0.1', port: 0, seed: 5, ...(compression ? { compression } : {}) });
  sims.push(s);
  return s;
}

/** A POST to the token endpoint with the raw answer: headers and undecoded bytes. */
function tokenPost(s: SimulatorServer, acceptEncoding?: string): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const url = new URL('/CMDB/v1/access_token', s.url);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(acceptEncoding ? { 'accept-encoding': acceptEncoding } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ clientID: s.clientId, secret: s.secret }));
  });
}

describe('simulator compression', () => {
  it('reads Accept-Encoding as a client means it', () => {
    expect(acceptsGzip('gzip, deflate, br')).toBe(true);
    expect(acceptsGzip('br;q=1, gzip;q=0.5')).toBe(true);
    expect(acceptsGzip('gzip;q=0, *')).toBe(false);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('identity')).toBe(false);
    expect(acceptsGzip(undefined)).toBe(false);
  });

  it('is off by default for the programmatic API', async () => {
    const s = await start();
    const r = await tokenPost(s, 'gzip');
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(r.body.toString('utf8'))).toMatchObject({ code: 200 });
  });

  it('gzip: with a Content-Length, only when the request accepts gzip', async () => {
    const s = await start('gzip');
    const plain = await tokenPost(s);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const r = await tokenPost(s, 'gzip, br');
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers.vary).toBe('Accept-Encoding');
    expect(Number(r.headers['content-length'])).toBe(r.body.length);
    expect(JSON.parse(gunzipSync(r.body).toString('utf8'))).toMatchObject({ code: 200 });
    // The log records the bytes on the wire.
    expect(s.requests().at(-1)?.bytes).toBe(r.body.length);
  });

  it('gzip-chunked: streamed without a Content-Length', async () => {
    const s = await start('gzip-chunked');
    const r = await tokenPost(s, 'gzip');
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers['transfer-encoding']).toBe('chunked');
    expect(JSON.parse(gunzipSync(r.body).toString('utf8'))).toMatchObject({ code: 200 });
  });

  it('rejects an unknown mode', async () => {
    await expect(startSimulator({ host: '127.0.0.1', port: 0, compression: 'zip' as Compression })).rejects.toThrow(/compression/);
  });
});
