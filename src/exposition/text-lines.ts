/**
 * An endpoint's series as lines of the text formats, made once when its poll is swapped into the
 * store (the store's SeriesRenderer, src/store/series.ts): per family, sorted by label text, UTF-8,
 * in pieces. Work on a large sample set is a generator that yields between slices, so that the
 * store can spread it over several turns of the event loop (or run it to the end at once when a
 * caller needs the result synchronously). The exposition assembles its data runs from these pieces.
 */
import type { Sample } from '../metrics/sample.js';
import { formatValue } from '../metrics/series-text.js';
import { SLICE, type Labelled, type SeriesLines, type SeriesRenderer } from '../store/series.js';

type Order = (a: number, b: number) => number;

/**
 * Sorts `list` (indices) with `order`, stable. A long list is sorted in runs of SLICE, one run per
 * step, and the runs merged pairwise, MERGE_SLICE elements per step, so no single step sorts more
 * than a slice or merges more than MERGE_SLICE elements.
 */
export function* sortSliced(list: number[], order: Order): Generator<void, number[]> {
  if (list.length <= SLICE) return list.sort(order);
  let runs: number[][] = [];
  for (let i = 0; i < list.length; i += SLICE) {
    runs.push(list.slice(i, i + SLICE).sort(order));
    yield;
  }
  while (runs.length > 1) {
    const next: number[][] = [];
    for (let i = 0; i < runs.length; i += 2) {
      const a = runs[i] ?? [];
      const b = runs[i + 1];
      next.push(b ? yield* merge(a, b, order) : a);
      yield;
    }
    runs = next;
  }
  return runs[0] ?? [];
}

/** Elements merged between two yields: a merge compares once per element, a sort about log2(SLICE) times. */
const MERGE_SLICE = SLICE * 8;

/** Merges two sorted runs; on a tie the element of `a` (the earlier run) comes first. */
function* merge(a: number[], b: number[], order: Order): Generator<void, number[]> {
  const out: number[] = new Array<number>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    if (k > 0 && k % MERGE_SLICE === 0) yield;
    out[k++] = order(b[j] as number, a[i] as number) < 0 ? (b[j++] as number) : (a[i++] as number);
  }
  while (i < a.length) out[k++] = a[i++] as number;
  while (j < b.length) out[k++] = b[j++] as number;
  return out;
}

/**
 * Lines per family, sorted by label text so the output does not depend on response order; UTF-8,
 * in pieces of about PIECE_BYTES: joining a large family into one Buffer would copy megabytes in
 * one turn of the event loop.
 */
export function* renderLines({ samples, texts }: Labelled): Generator<void, Map<string, Buffer[]>> {
  // Indices, not objects: a family's list is one array of small integers, nothing per series.
  const byFamily = new Map<string, number[]>();
  for (let i = 0; i < samples.length; i++) {
    if (i > 0 && i % (SLICE * 10) === 0) yield;
    const name = (samples[i] as Sample).name;
    let list = byFamily.get(name);
    if (!list) byFamily.set(name, (list = []));
    list.push(i);
  }
  yield;
  const byText: Order = (a, b) => {
    const x = texts[a] as string;
    const y = texts[b] as string;
    return x < y ? -1 : x > y ? 1 : 0;
  };
  const out = new Map<string, Buffer[]>();
  for (const [name, unsorted] of byFamily) {
    const list = yield* sortSliced(unsorted, byText);
    const pieces: Buffer[] = [];
    let text = '';
    for (let i = 0; i < list.length; i += SLICE) {
      for (let j = i; j < Math.min(list.length, i + SLICE); j++) {
        const k = list[j] as number;
        text += `${name}${texts[k] as string} ${formatValue((samples[k] as Sample).value)}\n`;
      }
      // A piece once its text is about PIECE_BYTES long (bytes ≥ characters), or at the end.
      if (text.length >= PIECE_BYTES || i + SLICE >= list.length) {
        pieces.push(Buffer.from(text, 'utf8'));
        text = '';
      }
      yield;
    }
    out.set(name, pieces);
  }
  return out;
}

/** Equal lines: a poll that brought the same series changes nothing that is served. */
export function sameLines(a: SeriesLines, b: SeriesLines): boolean {
  if (a.size !== b.size) return false;
  for (const [name, pieces] of a) {
    const other = b.get(name);
    if (!other || other.length !== pieces.length || pieces.some((p, i) => !p.equals(other[i] as Buffer))) return false;
  }
  return true;
}

/**
 * The size of the pieces the exposition is kept in: small enough to be made, copied or read in a
 * fraction of a millisecond, large enough that a response is tens of parts, not thousands (one
 * writev, and one hand-over to zlib each). Adjacent smaller pieces are joined up to about this size.
 */
export const PIECE_BYTES = 256 * 1024;

/**
 * `pieces` in order, adjacent ones smaller than `size` joined into pieces of about that size; each
 * joined piece is made when the next one is asked for, so a caller can spread the copies over time.
 */
export function* joinSmall(pieces: readonly Buffer[], size = PIECE_BYTES): Generator<Buffer> {
  let small: Buffer[] = [];
  let smallBytes = 0;
  for (let i = 0; i <= pieces.length; i++) {
    const p = pieces[i];
    // A run of small pieces ends once it reaches `size`, at a large piece, or at the end.
    if (small.length > 0 && (smallBytes >= size || p === undefined || p.length >= size)) {
      yield small.length === 1 ? (small[0] as Buffer) : Buffer.concat(small, smallBytes);
      small = [];
      smallBytes = 0;
    }
    if (p === undefined || p.length === 0) continue;
    if (p.length >= size) yield p;
    else {
      small.push(p);
      smallBytes += p.length;
    }
  }
}

/** The text formats' lines of an endpoint's series: what the store renders them with. */
export const TEXT_LINES: SeriesRenderer = { lines: renderLines, same: sameLines };
