/** jsonPieces writes what JSON.stringify writes, large lists in slices with the event loop free between them. */
import { describe, expect, it } from 'vitest';
import { JsonList } from '../../src/json-list.js';
import { jsonPieces, SLICE } from '../../src/persist/json-pieces.js';

async function text(value: unknown): Promise<{ text: string; pieces: number }> {
  let out = '';
  let pieces = 0;
  for await (const piece of jsonPieces(value)) {
    out += piece;
    pieces++;
  }
  return { text: out, pieces };
}

describe('jsonPieces', () => {
  it.each([
    ['a small object', { a: 1, b: 'x', c: [1, 2, { d: null }], e: undefined }],
    ['a number', 42],
    ['a list longer than a slice', Array.from({ length: SLICE * 2 + 3 }, (_, i) => ({ i, s: `v${i}` }))],
    ['a large list deep inside, beside small values', { v: 1, parts: { store: { endpoints: [{ endpoint: 'x', samples: Array.from({ length: SLICE + 1 }, (_, i) => [i]) }] }, skip: undefined }, after: 'end' }],
    ['an empty list', []],
  ])('%s: the same text as JSON.stringify', async (_what, value) => {
    expect(JSON.parse((await text(value)).text)).toEqual(JSON.parse(JSON.stringify(value)));
    expect((await text(value)).text).toBe(JSON.stringify(value));
  });

  it('writes a JsonList through its encoder, in slices', async () => {
    const items = Array.from({ length: SLICE * 3 }, (_, i) => ({ name: 'n', value: i === 1 ? Number.NaN : i }));
    const list = new JsonList(items, (s) => [s.name, Number.isFinite(s.value) ? s.value : String(s.value)]);
    const { text: out, pieces } = await text({ samples: list });
    const parsed = JSON.parse(out) as { samples: unknown[] };
    expect(parsed.samples).toHaveLength(SLICE * 3);
    expect(parsed.samples[1]).toEqual(['n', 'NaN']);
    expect(parsed.samples[5]).toEqual(['n', 5]);
    expect(pieces).toBeGreaterThan(3);
    // Stringified whole (a value too small to slice), it is still the encoded list.
    expect(JSON.stringify({ l: new JsonList([1, 2], (n) => n * 10) })).toBe('{"l":[10,20]}');
  });

  it('lets timers run between the slices of a large list', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      await text(Array.from({ length: SLICE * 20 }, (_, i) => ({ i })));
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
  });
});
