import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32Combine, crc32Sliced, PieceCrc, SLICE_BYTES } from '../../src/exposition/crc32.js';

const whole = (pieces: readonly Buffer[]) => crc32(Buffer.concat(pieces)) >>> 0;

describe('crc32Combine', () => {
  it.each([
    ['two short pieces', [3, 5]],
    ['an empty second piece', [17, 0]],
    ['an empty first piece', [0, 17]],
    ['pieces of odd and power-of-two lengths', [1, 2, 4096, 65_537, 3]],
  ])('gives the CRC of the whole for %s', (_name, lengths) => {
    const pieces = lengths.map((n) => randomBytes(n));
    let crc = 0;
    for (const p of pieces) crc = crc32Combine(crc, crc32(p) >>> 0, p.length);
    expect(crc).toBe(whole(pieces));
  });

  it('matches zlib on known text', () => {
    const a = Buffer.from('cmdb_series{stack="a"} 1\n');
    const b = Buffer.from('Zürich-连接器 2\n');
    expect(crc32Combine(crc32(a) >>> 0, crc32(b) >>> 0, b.length)).toBe(whole([a, b]));
  });
});

describe('crc32Sliced', () => {
  it('gives the CRC of a piece longer than several slices, and of an empty one', async () => {
    const big = randomBytes(SLICE_BYTES * 3 + 11);
    expect(await crc32Sliced(big)).toBe(crc32(big) >>> 0);
    expect(await crc32Sliced(Buffer.alloc(0))).toBe(0);
  });

  it('yields between slices, so other work runs while a long piece is read', async () => {
    const big = randomBytes(SLICE_BYTES * 4);
    let turns = 0;
    let reading = true;
    const count = async () => {
      while (reading) {
        turns++;
        await new Promise((r) => setImmediate(r));
      }
    };
    const counting = count();
    await crc32Sliced(big);
    reading = false;
    await counting;
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});

describe('PieceCrc', () => {
  it('combines the pieces and reads a cached piece once', async () => {
    const crcs = new PieceCrc();
    const shared = randomBytes(SLICE_BYTES + 5);
    const tail = randomBytes(100);
    const pieces = [
      { piece: shared, cache: true },
      { piece: tail, cache: false },
    ];
    expect(await crcs.ofAll(pieces)).toBe(whole([shared, tail]));
    // The shared piece's CRC comes from the cache: same promise, not a new reading.
    expect(crcs.of(shared)).toBe(crcs.of(shared));
    expect(crcs.of(tail, false)).not.toBe(crcs.of(tail, false));
    expect(await crcs.ofAll([{ piece: tail, cache: false }, { piece: shared, cache: true }])).toBe(whole([tail, shared]));
  });
});
