/**
 * Prometheus remote write 1.0 bodies read back, as a receiver reads them: snappy (block format),
 * then protobuf with protobufjs against Prometheus' .proto text (remote.proto / types.proto).
 */
import protobuf from 'protobufjs';
import { uncompressSync } from 'snappy';

const WriteRequest = protobuf
  .parse(
    `syntax = "proto3"; package prometheus;
     message WriteRequest { repeated TimeSeries timeseries = 1; }
     message TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
     message Label { string name = 1; string value = 2; }
     message Sample { double value = 1; int64 timestamp = 2; }`,
  )
  .root.lookupType('prometheus.WriteRequest');

export interface DecodedWriteRequest {
  timeseries?: Array<{ labels: Array<{ name: string; value: string }>; samples: Array<{ value: number; timestamp: number }> }>;
}

/** A request body decoded (timestamps as numbers). */
export function decodeWriteRequest(body: Buffer): DecodedWriteRequest {
  return WriteRequest.toObject(WriteRequest.decode(uncompressSync(body) as Buffer), { longs: Number }) as DecodedWriteRequest;
}

/** A series' labels as one key, `name=value,…` in the order sent. */
export const seriesKey = (labels: ReadonlyArray<{ name: string; value: string }>) => labels.map((l) => `${l.name}=${l.value}`).join(',');
