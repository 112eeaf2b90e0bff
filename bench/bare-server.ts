/**
 * The baseline: a bare node:http server, in a process of its own, that answers every request with
 * the same saved /metrics body, plain or pre-gzipped by Accept-Encoding, with Content-Length — what
 * serving a file costs. Usage: tsx bench/bare-server.ts <plain file> <gzip file>
 * Prints one JSON line ({ url, pid }) once it listens on 127.0.0.1, then serves until its parent goes away.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const [plainFile, gzipFile] = process.argv.slice(2);
if (!plainFile || !gzipFile) throw new Error('usage: bare-server.ts <plain file> <gzip file>');
const plain = readFileSync(plainFile);
const zipped = readFileSync(gzipFile);
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const server = createServer((req, res) => {
  // The benchmark sends `gzip` or nothing; a full q-value parse is the exporter's business.
  const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
  const body = gzip ? zipped : plain;
  res.setHeader('Content-Type', CONTENT_TYPE);
  res.setHeader('Content-Length', body.length);
  if (gzip) res.setHeader('Content-Encoding', 'gzip');
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});
process.once('disconnect', () => process.exit(0));
