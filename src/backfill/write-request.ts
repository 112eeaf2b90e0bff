/**
 * Prometheus remote write 1.0 bodies: a `prometheus.WriteRequest` in protobuf, snappy-compressed
 * (block format). The schema is small and fixed (remote.proto / types.proto of Prometheus):
 *
 *     WriteRequest { repeated TimeSeries timeseries = 1; }
 *     TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
 *     Label        { string name = 1; string value = 2; }
 *     Sample       { double value = 1; int64 timestamp = 2; }   // timestamp in ms
 *
 * so it is encoded here by hand, straight into one buffer per request: a general protobuf library
 * would want an object per sample, and a backfill sends hundreds of millions of them (the tests
 * decode the output with protobufjs against the .proto text).
 */
import { createRequire } from 'node:module';

/** Snappy's block format, by the pure-JS `snappyjs` (docs/performance.md: why not the native `snappy`). */
interface Snappy {
  compress(input: Uint8Array): Uint8Array;
}

let snappy: Snappy | undefined;

/** The compression, loaded at the first request body (the daemon and a blocks backfill never load it); throws naming it. */
export function loadCompression(): Snappy {
  if (snappy) return snappy;
  try {
    snappy = createRequire(import.meta.url)('snappyjs') as Snappy;
  } catch (err) {
    throw new Error(`remote write compresses its requests with the package snappyjs, which cannot be loaded (${(err as Error).message.split('\n')[0]}): install the exporter's dependencies again (npm ci)`);
  }
  return snappy;
}

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
function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 128) {
    buf[pos++] = (n % 128) | 128;
    n = Math.floor(n / 128);
  }
  buf[pos++] = n;
  return pos;
}

/** Field tags: the field's number << 3 | its wire type (0 varint, 1 fixed64, 2 length-delimited). */
const TAG_TIMESERIES = (1 << 3) | 2;
const TAG_LABEL = (1 << 3) | 2;
const TAG_SAMPLE = (2 << 3) | 2;
const TAG_NAME = (1 << 3) | 2;
const TAG_VALUE_STRING = (2 << 3) | 2;
const TAG_VALUE_DOUBLE = (1 << 3) | 1;
const TAG_TIMESTAMP = (2 << 3) | 0;

/**
 * The `Label` entries of a TimeSeries (each with its field tag), sorted by name as the protocol
 * requires; encoded once per series. `__name__` is an ordinary label here: the caller sets it.
 */
export function encodeLabels(labels: Readonly<Record<string, string>>): Buffer {
  const names = Object.keys(labels).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return Buffer.concat(
    names.map((name) => {
      const pair = [lengthDelimited(TAG_NAME, Buffer.from(name, 'utf8')), lengthDelimited(TAG_VALUE_STRING, Buffer.from(labels[name] as string, 'utf8'))];
      return lengthDelimited(TAG_LABEL, Buffer.concat(pair));
    }),
  );
}

/** A length-delimited field: its tag, the payload's length as a varint, the payload. */
function lengthDelimited(tag: number, payload: Buffer): Buffer {
  const head = Buffer.allocUnsafe(1 + varintLength(payload.length));
  head[0] = tag;
  writeVarint(head, 1, payload.length);
  return Buffer.concat([head, payload]);
}

/** One series of a request: its encoded labels and its samples (ms timestamps), in time order. */
export interface SeriesSamples {
  readonly labels: Buffer;
  readonly timestamps: ArrayLike<number>;
  readonly values: ArrayLike<number>;
  /** The samples [start, end) of the arrays go into this request (default: all). */
  readonly start?: number;
  readonly end?: number;
}

function sampleLength(timestampMs: number): number {
  return 1 + 8 + 1 + varintLength(timestampMs);
}

function seriesLength(s: SeriesSamples): number {
  let len = s.labels.length;
  const end = s.end ?? s.timestamps.length;
  for (let i = s.start ?? 0; i < end; i++) {
    const inner = sampleLength(s.timestamps[i] as number);
    len += 1 + varintLength(inner) + inner;
  }
  return len;
}

/** The uncompressed WriteRequest holding `series`. */
export function encodeWriteRequest(series: readonly SeriesSamples[]): Buffer {
  const lengths = series.map(seriesLength);
  const total = lengths.reduce((n, len) => n + 1 + varintLength(len) + len, 0);
  const buf = Buffer.allocUnsafe(total);
  let pos = 0;
  series.forEach((s, k) => {
    buf[pos++] = TAG_TIMESERIES;
    pos = writeVarint(buf, pos, lengths[k] as number);
    pos += s.labels.copy(buf, pos);
    const end = s.end ?? s.timestamps.length;
    for (let i = s.start ?? 0; i < end; i++) {
      const t = s.timestamps[i] as number;
      buf[pos++] = TAG_SAMPLE;
      pos = writeVarint(buf, pos, sampleLength(t));
      buf[pos++] = TAG_VALUE_DOUBLE;
      buf.writeDoubleLE(s.values[i] as number, pos);
      pos += 8;
      buf[pos++] = TAG_TIMESTAMP;
      pos = writeVarint(buf, pos, t);
    }
  });
  if (pos !== total) throw new Error(`WriteRequest encoding wrote ${pos} of ${total} bytes`);
  return buf;
}

/** The request body: the WriteRequest, snappy-compressed in the block format. */
export function writeRequestBody(series: readonly SeriesSamples[]): Buffer {
  const compressed = loadCompression().compress(encodeWriteRequest(series));
  return Buffer.from(compressed.buffer, compressed.byteOffset, compressed.byteLength);
}
