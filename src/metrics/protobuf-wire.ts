/**
 * The protobuf wire format's few pieces both encoders of the exporter use: the delimited
 * MetricFamily of /metrics (src/exposition/protobuf.ts) and the remote-write WriteRequest of the
 * backfill (src/backfill/write-request.ts). Each encoder writes its fixed schema by hand into one
 * buffer; this is only the varint arithmetic and the wire types they share.
 */

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;

/** Bytes of `n` (a non-negative integer up to 2^53) as a varint. */
export function varintLength(n: number): number {
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** Writes `n` (a non-negative integer up to 2^53) as a varint into `buf` at `pos`; returns the next position. */
export function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 128) {
    buf[pos++] = (n % 128) | 128;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}
