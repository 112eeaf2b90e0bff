/**
 * The wire primitives of the protobuf exposition (protobuf-format.ts): a growing buffer that writes
 * varints, doubles, strings and length-delimited messages, encoded by hand as the remote-write
 * encoder does (src/backfill/write-request.ts): the schema is small and fixed
 * (io.prometheus.client's metrics.proto), and a general library would build an object per series.
 */
import { WIRE_FIXED64, WIRE_LEN, WIRE_VARINT } from '../metrics/protobuf-wire.js';


/**
 * UTF-8 length of `s`: counted in JavaScript for the short ASCII strings labels are made of (a call
 * into Buffer's native code per label costs more than the loop), by Buffer otherwise.
 */
export function utf8Length(s: string): number {
  if (s.length > 64) return Buffer.byteLength(s, 'utf8');
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

export class ProtoWriter {
  private buf: Buffer;
  pos = 0;

  constructor(size = 4096) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  varint(n: number): this {
    this.ensure(10);
    while (n >= 128) {
      this.buf[this.pos++] = (n % 128) | 128;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
    return this;
  }

  tag(field: number, wire: number): this {
    return this.varint((field << 3) | wire);
  }

  uint(field: number, n: number): this {
    return this.tag(field, WIRE_VARINT).varint(n);
  }

  double(field: number, v: number): this {
    this.tag(field, WIRE_FIXED64);
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
    return this;
  }

  /** A string field; `len` is its UTF-8 length when the caller has it (utf8Length). */
  string(field: number, s: string, len = utf8Length(s)): this {
    this.tag(field, WIRE_LEN).varint(len);
    this.ensure(len);
    if (len === s.length && len <= 64) {
      const buf = this.buf;
      let pos = this.pos;
      for (let i = 0; i < len; i++) buf[pos++] = s.charCodeAt(i);
    } else this.buf.write(s, this.pos, 'utf8');
    this.pos += len;
    return this;
  }

  /** A length-delimited field whose content is `other`'s bytes. */
  message(field: number, other: ProtoWriter): this {
    this.tag(field, WIRE_LEN).varint(other.pos);
    this.raw(other.buf.subarray(0, other.pos));
    return this;
  }

  raw(bytes: Uint8Array): this {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** Empties the writer to be used again (a scratch writer per message). */
  reset(): this {
    this.pos = 0;
    return this;
  }

  /** The bytes written, in a Buffer of their own. */
  bytes(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}

/** A google.protobuf.Timestamp of `unixSeconds` (seconds = 1, nanos = 2). */
export function timestamp(w: ProtoWriter, unixSeconds: number): ProtoWriter {
  const seconds = Math.floor(unixSeconds);
  const nanos = Math.round((unixSeconds - seconds) * 1e9);
  if (seconds > 0) w.uint(1, seconds);
  if (nanos > 0) w.uint(2, Math.min(nanos, 999_999_999));
  return w;
}
