/**
 * The protobuf exposition read back as Prometheus reads it: length-delimited
 * io.prometheus.client.MetricFamily messages, decoded with protobufjs against the .proto text of
 * client_model's metrics.proto (the fields the exporter writes), and turned into text-format
 * sample lines for comparison with the text format.
 */
import protobuf from 'protobufjs';

const root = protobuf.parse(
  `syntax = "proto2"; package io.prometheus.client;
   message LabelPair { optional string name = 1; optional string value = 2; }
   enum MetricType { COUNTER = 0; GAUGE = 1; SUMMARY = 2; UNTYPED = 3; HISTOGRAM = 4; GAUGE_HISTOGRAM = 5; }
   message Timestamp { optional int64 seconds = 1; optional int32 nanos = 2; }
   message Gauge { optional double value = 1; }
   message Counter { optional double value = 1; optional Timestamp created_timestamp = 3; }
   message Quantile { optional double quantile = 1; optional double value = 2; }
   message Summary { optional uint64 sample_count = 1; optional double sample_sum = 2; repeated Quantile quantile = 3; optional Timestamp created_timestamp = 4; }
   message Untyped { optional double value = 1; }
   message Bucket { optional uint64 cumulative_count = 1; optional double upper_bound = 2; }
   message Histogram { optional uint64 sample_count = 1; optional double sample_sum = 2; repeated Bucket bucket = 3; optional Timestamp created_timestamp = 15; }
   message Metric { repeated LabelPair label = 1; optional Gauge gauge = 2; optional Counter counter = 3; optional Summary summary = 4; optional Untyped untyped = 5; optional Histogram histogram = 7; optional int64 timestamp_ms = 6; }
   message MetricFamily { optional string name = 1; optional string help = 2; optional MetricType type = 3; repeated Metric metric = 4; }`,
).root;
const MetricFamily = root.lookupType('io.prometheus.client.MetricFamily');

interface Stamp {
  seconds?: number;
  nanos?: number;
}
export interface DecodedMetric {
  label?: Array<{ name: string; value: string }>;
  gauge?: { value?: number };
  counter?: { value?: number; createdTimestamp?: Stamp };
  untyped?: { value?: number };
  histogram?: { sampleCount?: number; sampleSum?: number; bucket?: Array<{ cumulativeCount?: number; upperBound?: number }>; createdTimestamp?: Stamp };
  summary?: { sampleCount?: number; sampleSum?: number; quantile?: Array<{ quantile?: number; value?: number }>; createdTimestamp?: Stamp };
}
export interface DecodedFamily {
  name: string;
  help?: string;
  type?: string;
  metric?: DecodedMetric[];
}

/** Every delimited MetricFamily of a body, in order. */
export function decodeFamilies(body: Uint8Array): DecodedFamily[] {
  const reader = protobuf.Reader.create(body);
  const out: DecodedFamily[] = [];
  while (reader.pos < reader.len) {
    out.push(MetricFamily.toObject(MetricFamily.decodeDelimited(reader), { longs: Number, enums: String }) as DecodedFamily);
  }
  return out;
}

const fmt = (v: number | undefined) => {
  const n = v ?? 0;
  return Number.isNaN(n) ? 'NaN' : n === Infinity ? '+Inf' : n === -Infinity ? '-Inf' : String(n);
};
const esc = (v: string) => v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
const labelText = (pairs: ReadonlyArray<{ name: string; value: string }>) => (pairs.length === 0 ? '' : `{${pairs.map((p) => `${p.name}="${esc(p.value)}"`).join(',')}}`);

/** A start in unix seconds. */
export const seconds = (t: Stamp | undefined) => (t ? (t.seconds ?? 0) + (t.nanos ?? 0) / 1e9 : undefined);

/** The families as text-format sample lines (a histogram's +Inf bucket from its count, as Prometheus adds it). */
export function sampleLines(families: readonly DecodedFamily[]): string[] {
  const lines: string[] = [];
  for (const f of families) {
    for (const m of f.metric ?? []) {
      const labels = m.label ?? [];
      if (m.histogram) {
        const h = m.histogram;
        for (const b of h.bucket ?? []) lines.push(`${f.name}_bucket${labelText([...labels, { name: 'le', value: fmt(b.upperBound) }])} ${fmt(b.cumulativeCount)}`);
        lines.push(`${f.name}_bucket${labelText([...labels, { name: 'le', value: '+Inf' }])} ${fmt(h.sampleCount)}`);
        lines.push(`${f.name}_sum${labelText(labels)} ${fmt(h.sampleSum)}`, `${f.name}_count${labelText(labels)} ${fmt(h.sampleCount)}`);
      } else if (m.summary) {
        const s = m.summary;
        for (const q of s.quantile ?? []) lines.push(`${f.name}${labelText([...labels, { name: 'quantile', value: fmt(q.quantile) }])} ${fmt(q.value)}`);
        lines.push(`${f.name}_sum${labelText(labels)} ${fmt(s.sampleSum)}`, `${f.name}_count${labelText(labels)} ${fmt(s.sampleCount)}`);
      } else {
        lines.push(`${f.name}${labelText(labels)} ${fmt((m.gauge ?? m.counter ?? m.untyped)?.value)}`);
      }
    }
  }
  return lines;
}
