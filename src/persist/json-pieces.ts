/**
 * JSON text made in pieces, the event loop free between them: a large stack's state holds some
 * 200,000 series, and one JSON.stringify of it would hold the loop for a few hundred ms. Arrays and
 * JsonLists (src/json-list.ts) longer than SLICE are written SLICE elements at a time, with a turn of
 * the event loop after each.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { JsonList } from '../json-list.js';

/**
 * Elements of a large array stringified per piece: 500 connector rows are some 400 KB of JSON, a few
 * ms to stringify, and 500 samples less.
 */
export const SLICE = 500;

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof JsonList);
}

/** True when `x` holds a list long enough to be written in slices (so it is walked, not stringified whole). */
function large(x: unknown): boolean {
  if (x instanceof JsonList) return x.items.length > SLICE;
  if (Array.isArray(x)) return x.length > SLICE || x.some(large);
  if (isPlainObject(x)) return Object.values(x).some(large);
  return false;
}

/**
 * The JSON text of `value` in pieces, as JSON.stringify would write it (undefined properties left
 * out), yielding to the event loop after each slice of a large list.
 */
export async function* jsonPieces(value: unknown): AsyncGenerator<string> {
  if (!large(value)) {
    yield JSON.stringify(value) ?? 'null';
    return;
  }
  if (value instanceof JsonList || Array.isArray(value)) {
    const items: readonly unknown[] = value instanceof JsonList ? value.items : value;
    const encode: (item: unknown) => unknown = value instanceof JsonList ? value.encode : (item) => item;
    yield '[';
    for (let start = 0; start < items.length; start += SLICE) {
      const slice = items.slice(start, start + SLICE);
      if (slice.some((e) => large(e))) {
        for (const [i, e] of slice.entries()) {
          if (start + i > 0) yield ',';
          yield* jsonPieces(encode(e));
        }
      } else {
        const text = JSON.stringify(slice.map(encode));
        yield `${start > 0 ? ',' : ''}${text.slice(1, -1)}`;
      }
      await nextTurn();
    }
    yield ']';
    return;
  }
  yield '{';
  let first = true;
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    yield `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    yield* jsonPieces(v);
  }
  yield '}';
}
