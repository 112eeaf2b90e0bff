/**
 * The hand-written WriteRequest encoder, decoded by protobufjs from the .proto text of Prometheus
 * (remote.proto / types.proto, the fields remote write 1.0 uses), after snappy.
 */
import protobuf from 'protobufjs';
import { uncompressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import { encodeLabels, encodeWriteRequest, varintLength, writeRequestBody } from '../../src/backfill/write-request.js';

const PROTO = `
syntax = "proto3";
package prometheus;
message WriteRequest { repeated TimeSeries timeseries = 1; }
message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
message Label { string name = 1; string value = 2; }
message Sample { double value = 1; int64 timestamp = 2; }
`;
const WriteRequest = protobuf.parse(PROTO).root.lookupType('prometheus.WriteRequest');

interface Decoded {
  timeseries: Array<{ labels: Array<{ name: string; value: string }>; samples: Array<{ value: number; timestamp: number }> }>;
}

function decode(bytes: Uint8Array): Decoded {
  return WriteRequest.toObject(WriteRequest.decode(bytes), { longs: Number, defaults: true }) as Decoded;
}

describe('WriteRequest encoding', () => {
  it('encodes series with sorted labels, double values and millisecond timestamps', () => {
    const a = encodeLabels({ stack: 'prod', __name__: 'cmdb_assets', job: 'cmdb-exporter', Zed: 'x' });
    const b = encodeLabels({ __name__: 'cmdb_connector_health', connector: 'Zürich "FS"\n', health: 'ok' });
    const t0 = Date.parse('2026-11-01T00:00:00Z');
    const body = encodeWriteRequest([
      { labels: a, timestamps: [t0, t0 + 300_000], values: [1234, 1240.5] },
      { labels: b, timestamps: new Float64Array([t0, t0 + 1, t0 + 2]), values: new Float64Array([1, Number.NaN, Number.POSITIVE_INFINITY]), start: 1, end: 3 },
    ]);
    const got = decode(body);
    expect(got.timeseries).toHaveLength(2);
    expect(got.timeseries[0]?.labels).toEqual([
      { name: 'Zed', value: 'x' },
      { name: '__name__', value: 'cmdb_assets' },
      { name: 'job', value: 'cmdb-exporter' },
      { name: 'stack', value: 'prod' },
    ]);
    expect(got.timeseries[0]?.samples).toEqual([
      { value: 1234, timestamp: t0 },
      { value: 1240.5, timestamp: t0 + 300_000 },
    ]);
    expect(got.timeseries[1]?.labels.find((l) => l.name === 'connector')?.value).toBe('Zürich "FS"\n');
    const samples = got.timeseries[1]?.samples ?? [];
    expect(samples.map((s) => s.timestamp)).toEqual([t0 + 1, t0 + 2]);
    expect(Number.isNaN(samples[0]?.value)).toBe(true);
    expect(samples[1]?.value).toBe(Number.POSITIVE_INFINITY);
  });

  it('compresses with snappy in the block format', () => {
    const labels = encodeLabels({ __name__: 'up', job: 'x' });
    const series = [{ labels, timestamps: Array.from({ length: 500 }, (_, i) => 1_700_000_000_000 + i * 15_000), values: Array.from({ length: 500 }, () => 1) }];
    const body = writeRequestBody(series);
    const plain = uncompressSync(body) as Buffer;
    expect(plain.equals(encodeWriteRequest(series))).toBe(true);
    expect(body.length).toBeLessThan(plain.length / 2);
    expect(decode(plain).timeseries[0]?.samples).toHaveLength(500);
  });

  it('an empty request is an empty message', () => {
    expect(encodeWriteRequest([]).length).toBe(0);
    expect(decode(encodeWriteRequest([])).timeseries).toEqual([]);
  });

  it.each([
    [0, 1],
    [127, 1],
    [128, 2],
    [2 ** 32, 5],
    [Date.parse('2100-01-01T00:00:00Z'), 6],
    [2 ** 53 - 1, 8],
  ])('varint of %d takes %d bytes', (n, bytes) => {
    expect(varintLength(n)).toBe(bytes);
  });
});
