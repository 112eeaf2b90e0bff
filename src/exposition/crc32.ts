/**
 * CRC-32 (the one gzip's trailer holds) of a body made of pieces, without reading the pieces again
 * for every body: the CRC of each piece is computed once, in slices of SLICE_BYTES between turns of
 * the event loop, and the CRCs of the pieces are combined (zlib's crc32_combine, which Node.js does
 * not expose: CRC(A‖B) = CRC(A)·x^(8·|B|) ⊕ CRC(B) over GF(2), reflected).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { crc32 } from 'node:zlib';

/** Bytes of CRC computed in one turn of the event loop: well under a millisecond. */
export const SLICE_BYTES = 256 * 1024;

/** The CRC-32 polynomial, reflected. */
const POLY = 0xedb88320;

/** a·b modulo the polynomial (reflected bit order), as in zlib's multmodp. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial. */
const X2N: number[] = [];
{
  let p = 0x40000000; // x^1
  X2N.push(p);
  for (let n = 1; n < 32; n++) X2N.push((p = multModP(p, p)));
}

/** x^(n·2^k) modulo the polynomial. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k % 32] as number, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC-32 of A‖B from the CRC of A, the CRC of B and the length of B. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA) ^ crcB) >>> 0;
}

/** The CRC-32 of `bytes`, SLICE_BYTES per turn of the event loop. */
export async function crc32Sliced(bytes: Uint8Array): Promise<number> {
  let crc = 0;
  for (let i = 0; i < bytes.length; i += SLICE_BYTES) {
    if (i > 0) await nextTurn();
    crc = crc32(bytes.subarray(i, i + SLICE_BYTES), crc);
  }
  return crc >>> 0;
}

/** CRC-32 of bodies made of shared pieces: each piece's CRC is computed once (per Buffer) and combined. */
export class PieceCrc {
  private readonly crcs = new WeakMap<Uint8Array, Promise<number>>();

  /** The CRC-32 of `piece`; `cache` false for a piece that will not come again. */
  of(piece: Uint8Array, cache = true): Promise<number> {
    let crc = cache ? this.crcs.get(piece) : undefined;
    if (!crc) {
      crc = crc32Sliced(piece);
      if (cache) this.crcs.set(piece, crc);
    }
    return crc;
  }

  /**
   * The CRC-32 of the pieces one after the other. The pieces are read one at a time: slices of
   * several pieces due in the same turn would all run in it.
   */
  async ofAll(pieces: readonly { readonly piece: Uint8Array; readonly cache: boolean }[]): Promise<number> {
    let crc = 0;
    for (const { piece, cache } of pieces) crc = crc32Combine(crc, await this.of(piece, cache), piece.length);
    return crc;
  }
}
