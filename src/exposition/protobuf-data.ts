/**
 * The protobuf format's data runs (exposition.ts DataEncoding): each endpoint's samples as
 * `metric` fields per family, encoded the first time a protobuf scrape needs them after the
 * endpoint's poll was swapped in, and kept with the endpoint's rendered lines (the same object
 * while the series are the same), so that encoding costs once per change, not per scrape.
 */
import { CATALOGUE } from '../metrics/catalogue.js';
import type { Sample } from '../metrics/sample.js';
import type { HeldEndpoint } from '../store/snapshot-store.js';
import type { SeriesLines } from '../store/series.js';
import type { DataEncoding } from './exposition.js';
import type { FamilyMeta } from './family.js';
import { ProtoWriter } from './protobuf.js';
import { familyHead, writeSimpleMetric } from './protobuf-format.js';

const META: ReadonlyMap<string, FamilyMeta> = new Map(CATALOGUE.map((f) => [f.name, f]));

function encode(stack: string, samples: readonly Sample[]): Map<string, Buffer[]> {
  const writers = new Map<string, ProtoWriter>();
  for (const s of samples) {
    const meta = META.get(s.name);
    if (!meta) continue;
    let w = writers.get(s.name);
    if (!w) writers.set(s.name, (w = new ProtoWriter()));
    writeSimpleMetric(w, meta, { stack, ...s.labels }, s.value);
  }
  const out = new Map<string, Buffer[]>();
  for (const [name, w] of writers) out.set(name, [w.bytes()]);
  return out;
}

export function protobufData(): DataEncoding {
  const encoded = new WeakMap<SeriesLines, Map<string, Buffer[]>>();
  return {
    pieces(stack: string, held: HeldEndpoint) {
      let pieces = encoded.get(held.lines);
      if (!pieces) encoded.set(held.lines, (pieces = encode(stack, held.samples)));
      return pieces;
    },
    head(name, pieces) {
      const meta = META.get(name);
      return meta && familyHead(meta, pieces.reduce((n, p) => n + p.length, 0));
    },
  };
}
