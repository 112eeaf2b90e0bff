/**
 * The protobuf format's data runs (exposition.ts DataEncoding): each endpoint's samples as
 * `metric` fields per family, encoded once per change of the endpoint and kept with its rendered
 * lines (the same object while the series are the same). Once protobuf is asked for, a change is
 * encoded ahead of scrapes in slices of SLICE series (`prepare`), as the store renders the text
 * lines, so that no turn of the event loop encodes a whole large endpoint; a scrape that comes
 * before the slices are done encodes what is left itself.
 */
import { DATA_ENDPOINTS } from '../api/endpoints.js';
import { CATALOGUE } from '../metrics/catalogue.js';
import type { Sample } from '../metrics/sample.js';
import type { HeldEndpoint, SnapshotStore } from '../store/snapshot-store.js';
import { SLICE, type SeriesLines } from '../store/series.js';
import type { DataEncoding } from './exposition.js';
import type { FamilyMeta } from './family.js';
import { ProtoWriter } from './protobuf.js';
import { familyHead, writeSimpleMetric } from './protobuf-format.js';

const META: ReadonlyMap<string, FamilyMeta> = new Map(CATALOGUE.map((f) => [f.name, f]));

function* encode(stack: string, samples: readonly Sample[]): Generator<void, Map<string, Buffer[]>> {
  const writers = new Map<string, ProtoWriter>();
  for (let i = 0; i < samples.length; i++) {
    if (i > 0 && i % SLICE === 0) yield;
    const s = samples[i] as Sample;
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

/** Runs a sliced step to its end at once (a scrape needs the result now). */
function runToEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

export function protobufData(): DataEncoding {
  const encoded = new WeakMap<SeriesLines, Map<string, Buffer[]>>();
  return {
    pieces(stack: string, held: HeldEndpoint) {
      let pieces = encoded.get(held.lines);
      if (!pieces) encoded.set(held.lines, (pieces = runToEnd(encode(stack, held.samples))));
      return pieces;
    },
    head(name, pieces) {
      const meta = META.get(name);
      return meta && familyHead(meta, pieces.reduce((n, p) => n + p.length, 0));
    },
    *prepare(store: SnapshotStore) {
      for (const stack of store.stackNames()) {
        const endpoints = store.endpoints(stack);
        for (const endpoint of DATA_ENDPOINTS) {
          const held = endpoints?.get(endpoint);
          if (!held || encoded.has(held.lines)) continue;
          const pieces = yield* encode(stack, held.samples);
          // A scrape may have encoded it meanwhile: keep the first.
          if (!encoded.has(held.lines)) encoded.set(held.lines, pieces);
          yield;
        }
      }
    },
  };
}
