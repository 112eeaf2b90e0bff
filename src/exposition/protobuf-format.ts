/**
 * The protobuf exposition: length-delimited io.prometheus.client.MetricFamily messages
 * (application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited),
 * what Prometheus asks for first with native histograms on (and for created timestamps in 3.x).
 *
 *     MetricFamily { string name = 1; string help = 2; MetricType type = 3; repeated Metric metric = 4; }
 *     Metric       { repeated LabelPair label = 1; Gauge gauge = 2; Counter counter = 3;
 *                    Summary summary = 4; Untyped untyped = 5; Histogram histogram = 7; }
 *     Counter      { double value = 1; Timestamp created_timestamp = 3; }
 *     Histogram    { uint64 sample_count = 1; double sample_sum = 2; repeated Bucket bucket = 3;
 *                    Timestamp created_timestamp = 15; }   Bucket { uint64 cumulative_count = 1; double upper_bound = 2; }
 *     Summary      { uint64 sample_count = 1; double sample_sum = 2; repeated Quantile quantile = 3;
 *                    Timestamp created_timestamp = 4; }    Quantile { double quantile = 1; double value = 2; }
 *
 * The same families, names, labels and values as the text format; an info family is a gauge here,
 * as in the text format. Every counter, histogram and summary series carries its start
 * (created_timestamp) when the exposition knows it (start-times.ts). A histogram's `+Inf` bucket is
 * left out: its count is sample_count (as client_golang writes it).
 */
import type { Family, FamilyMeta, FamilySeries, Format } from './family.js';
import { varintLength, WIRE_LEN } from '../metrics/protobuf-wire.js';
import { ProtoWriter, timestamp, utf8Length } from './protobuf.js';

export const PROTOBUF_CONTENT_TYPE = 'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited';

const TYPES: Readonly<Record<string, number>> = { counter: 0, gauge: 1, summary: 2, untyped: 3, histogram: 4 };
const typeOf = (t: string) => TYPES[t] ?? 3;

type Labels = FamilySeries['labels'];

/** The label pairs of a series, in the family's order when it has one (labels outside it follow). */
function labelPairs(w: ProtoWriter, order: readonly string[] | undefined, labels: Labels): void {
  const names = order ? [...order.filter((n) => n in labels), ...Object.keys(labels).filter((n) => !order.includes(n)).sort()] : Object.keys(labels);
  for (const n of names) {
    const value = labels[n];
    if (value === undefined) continue;
    const nameLen = utf8Length(n);
    const valueText = String(value);
    const valueLen = utf8Length(valueText);
    w.tag(1, WIRE_LEN).varint(1 + varintLength(nameLen) + nameLen + 1 + varintLength(valueLen) + valueLen);
    w.string(1, n, nameLen).string(2, valueText, valueLen);
  }
}

const scratch = new ProtoWriter();
const inner = new ProtoWriter();
const leaf = new ProtoWriter();

/** One Metric of a gauge, counter or untyped family, as a `metric = 4` field, into `out`. */
export function writeSimpleMetric(out: ProtoWriter, meta: FamilyMeta, labels: Labels, value: number, created?: number): void {
  scratch.reset();
  labelPairs(scratch, meta.labels, labels);
  inner.reset().double(1, value);
  if (meta.type === 'counter') {
    if (created !== undefined) inner.message(3, timestamp(leaf.reset(), created));
    scratch.message(3, inner);
  } else scratch.message(meta.type === 'gauge' ? 2 : 5, inner);
  out.message(4, scratch);
}

/** A bucket's `le` or a quantile as prom-client gives it: a number, or the text `+Inf`. */
function boundOf(v: string | number | undefined): number {
  if (typeof v === 'number') return v;
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

const withoutLabel = (labels: Labels, name: string): Labels => {
  const { [name]: _drop, ...rest } = labels;
  return rest;
};

/** A histogram's or summary's series (buckets or quantiles, `_sum`, `_count`) grouped by their labels. */
function writeGrouped(out: ProtoWriter, { family: f, series }: Family): void {
  const isHistogram = f.type === 'histogram';
  const bound = isHistogram ? 'le' : 'quantile';
  const groups = new Map<string, { labels: Labels; parts: FamilySeries[]; sum: number; count: number; created?: number }>();
  for (const s of series) {
    const labels = withoutLabel(s.labels, bound);
    const key = JSON.stringify(Object.entries(labels));
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { labels, parts: [], sum: 0, count: 0, ...(s.created === undefined ? {} : { created: s.created }) }));
    const name = s.name ?? f.name;
    if (name === `${f.name}_sum`) g.sum = s.value;
    else if (name === `${f.name}_count`) g.count = s.value;
    else g.parts.push(s);
  }
  for (const g of groups.values()) {
    scratch.reset();
    labelPairs(scratch, f.labels, g.labels);
    inner.reset().uint(1, g.count).double(2, g.sum);
    for (const p of g.parts) {
      const b = boundOf(p.labels[bound]);
      if (isHistogram && b === Infinity) continue;
      leaf.reset();
      if (isHistogram) leaf.uint(1, p.value).double(2, b);
      else leaf.double(1, b).double(2, p.value);
      inner.message(3, leaf);
    }
    if (g.created !== undefined) inner.message(isHistogram ? 15 : 4, timestamp(leaf.reset(), g.created));
    scratch.message(isHistogram ? 7 : 4, inner);
    out.message(4, scratch);
  }
}

/** The start of a delimited MetricFamily whose `metric` fields (`metricBytes` of them) follow: its length, name, help, type. */
export function familyHead(f: FamilyMeta, metricBytes: number): Buffer {
  const head = new ProtoWriter(256).string(1, f.name).string(2, f.help).uint(3, typeOf(f.type));
  const length = head.pos + metricBytes;
  return new ProtoWriter(head.pos + 10).varint(length).raw(head.bytes()).bytes();
}

/** One family, delimited; empty when it has no series. */
export function writeProtobufFamily(family: Family): Buffer {
  if (family.series.length === 0) return Buffer.alloc(0);
  const metrics = new ProtoWriter();
  const f = family.family;
  if (f.type === 'histogram' || f.type === 'summary') writeGrouped(metrics, family);
  else for (const s of family.series) writeSimpleMetric(metrics, f, s.labels, s.value, s.created);
  return Buffer.concat([familyHead(f, metrics.pos), metrics.bytes()]);
}

export const PROTOBUF_FORMAT: Format = {
  name: 'protobuf',
  contentType: PROTOBUF_CONTENT_TYPE,
  // A data family's head depends on its series' bytes: the exposition asks familyHead (exposition.ts).
  header: () => '',
  write: (families) => Buffer.concat(families.map(writeProtobufFamily)),
};
