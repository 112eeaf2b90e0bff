/**
 * The gzip of a response body (responses.ts gzipParts): one gzip member that decodes to the parts in
 * their order, whether the body fits one batch handed to zlib or takes several.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gzipParts } from '../../src/exposition/responses.js';

/** `count` parts of about 256 KiB (the exposition's piece size), each of its own bytes. */
const parts = (count: number) => Array.from({ length: count }, (_, i) => Buffer.alloc(256 * 1024 + i * 7, `piece ${i}: cmdb_connector_input_records{connector="c${i}"} ${i}\n`));

describe('gzipParts', () => {
  it.each([
    ['no part', 0],
    ['one part', 1],
    ['a body of one batch', 8],
    ['a body of several batches (over 4 MiB each)', 40],
  ])('%s: one gzip member, the parts in order once decoded', async (_name, count) => {
    const body = parts(count);
    const zipped = await gzipParts(body);
    expect([...zipped.subarray(0, 3)]).toEqual([0x1f, 0x8b, 0x08]);
    expect(gunzipSync(zipped).equals(Buffer.concat(body))).toBe(true);
  });

  it('bodies asked for at once each get their own bytes', async () => {
    const bodies = [parts(3), parts(20), [Buffer.from('# EOF\n')]];
    const zipped = await Promise.all(bodies.map((b) => gzipParts(b)));
    zipped.forEach((z, i) => expect(gunzipSync(z).equals(Buffer.concat(bodies[i] as Buffer[]))).toBe(true));
  });
});
