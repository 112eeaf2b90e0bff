/** Content-Encoding cases the simulator does not produce: a mislabelled body, a cut-short gzip, a gzip 401, stacked codings. */
import type { ServerResponse } from 'node:http';
import { gzipSync, brotliCompressSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { CmdbEncodingError, CmdbTokenRejectedError } from '../../src/errors.js';
import { makeClient, rejection } from './helpers/client.js';
import { startLocal, type LocalServer } from './helpers/server.js';
import { testStack } from './helpers/stack.js';

const servers: LocalServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const TOKEN = JSON.stringify({ code: 200, message: 'success', data: { token: 'tok-1-abcdef' } });
const LICENSE = JSON.stringify({ expireDate: '2030-01-01' });

/** The token endpoint answers plainly; the license as `license` says. */
async function serve(license: (res: ServerResponse) => void, token?: (res: ServerResponse) => void): Promise<LocalServer> {
  const s = await startLocal((req, res) => {
    if (req.url === '/CMDB/v1/access_token') {
      if (token) return token(res);
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(TOKEN);
    }
    license(res);
  });
  servers.push(s);
  return s;
}

describe('Content-Encoding of CMDB answers', () => {
  it('names gzip when a body labelled gzip is not (a proxy that adds the header only)', async () => {
    const s = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(LICENSE);
    });
    const err = await rejection(makeClient(testStack({ baseUrl: s.url })).client.get('license'));
    expect(err).toBeInstanceOf(CmdbEncodingError);
    expect(err.message).toContain('Content-Encoding "gzip" could not be decoded');
  });

  it('names gzip when the compressed body is cut short', async () => {
    const whole = gzipSync(Buffer.from(LICENSE.repeat(50)));
    const s = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(whole.subarray(0, Math.floor(whole.length / 2)));
    });
    const err = await rejection(makeClient(testStack({ baseUrl: s.url })).client.get('license'));
    expect(err).toBeInstanceOf(CmdbEncodingError);
    expect(err.message).toContain('"gzip"');
  });

  it('undoes stacked codings in the reverse order of the header', async () => {
    const s = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip, br' });
      res.end(brotliCompressSync(gzipSync(Buffer.from(LICENSE))));
    });
    expect((await makeClient(testStack({ baseUrl: s.url })).client.get('license')).expireDate).toBe('2030-01-01');
  });

  it('reads a gzip-encoded token rejection (401) for its code', async () => {
    const s = await serve(
      (res) => res.end(LICENSE),
      (res) => {
        res.writeHead(401, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(gzipSync(Buffer.from(JSON.stringify({ code: 401002, message: 'Invalid client credentials' }))));
      },
    );
    const err = await rejection(makeClient(testStack({ baseUrl: s.url })).client.get('license'));
    expect(err).toBeInstanceOf(CmdbTokenRejectedError);
    expect(err.message).toContain('code 401002');
  });

  it('a server value that is not a plain token is not echoed', async () => {
    const s = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'x secret=hunter2' });
      res.end(LICENSE);
    });
    const err = await rejection(makeClient(testStack({ baseUrl: s.url })).client.get('license'));
    expect(err.message).toContain('an unreadable value');
    expect(err.message).not.toContain('hunter2');
  });
});
