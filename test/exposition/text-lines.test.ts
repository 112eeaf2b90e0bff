import { describe, expect, it } from 'vitest';
import type { Sample } from '../../src/metrics/sample.js';
import { joinSmall, PIECE_BYTES, renderLines, sortSliced } from '../../src/exposition/text-lines.js';
import { SLICE } from '../../src/store/series.js';

/** Runs a generator to its end, counting its yields. */
function run<T>(g: Generator<void, T>): { value: T; yields: number } {
  let yields = 0;
  for (;;) {
    const step = g.next();
    if (step.done) return { value: step.value, yields };
    yields++;
  }
}

describe('sortSliced', () => {
  const keys = (n: number) => Array.from({ length: n }, (_, i) => `k${String((i * 7919) % 1009).padStart(5, '0')}`);

  it.each([
    ['shorter than a slice', 10],
    ['a few slices, the last one partial', SLICE * 3 + 7],
    ['many slices (several merge rounds, merges longer than a step)', SLICE * 40 + 1],
  ])('sorts a list %s as one stable sort would', (_name, n) => {
    const k = keys(n);
    const order = (a: number, b: number) => ((k[a] as string) < (k[b] as string) ? -1 : (k[a] as string) > (k[b] as string) ? 1 : 0);
    const indices = Array.from({ length: n }, (_, i) => i);
    const expected = [...indices].sort(order);
    const { value } = run(sortSliced(indices, order));
    // Equal keys (there are: 1009 distinct keys) keep their input order, as Array.prototype.sort does.
    expect(value).toEqual(expected);
  });

  it('yields while it sorts a long list: no step sorts or merges the whole of it', () => {
    const k = keys(SLICE * 40);
    const order = (a: number, b: number) => ((k[a] as string) < (k[b] as string) ? -1 : (k[a] as string) > (k[b] as string) ? 1 : 0);
    const { yields } = run(sortSliced(Array.from({ length: k.length }, (_, i) => i), order));
    // 40 runs sorted, then merge rounds of 20, 10, 5, 3, 2, 1 merges, and the longer merges yield inside.
    expect(yields).toBeGreaterThan(40 + 41);
  });
});

describe('renderLines', () => {
  it('renders each family sorted by label text, from the samples and their texts', () => {
    const samples: Sample[] = [
      { name: 'b', labels: {}, value: 2 },
      { name: 'a', labels: {}, value: 1 },
      { name: 'b', labels: {}, value: 1.5 },
    ];
    const texts = ['{x="2"}', '{x="1"}', '{x="1"}'];
    const { value } = run(renderLines({ samples, texts }));
    expect([...value.keys()]).toEqual(['b', 'a']);
    expect(Buffer.concat(value.get('b') ?? []).toString('utf8')).toBe('b{x="1"} 1.5\nb{x="2"} 2\n');
    expect(Buffer.concat(value.get('a') ?? []).toString('utf8')).toBe('a{x="1"} 1\n');
  });

  it('renders a large family in pieces of about PIECE_BYTES, never one Buffer of it all', () => {
    const n = SLICE * 40;
    const samples: Sample[] = Array.from({ length: n }, () => ({ name: 'f', labels: {}, value: 1 }));
    const texts = samples.map((_, i) => `{id="${String(i).padStart(8, '0')}",note="Zürich 连接器 ${'x'.repeat(40)}"}`);
    const pieces = run(renderLines({ samples, texts })).value.get('f') ?? [];
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces.slice(0, -1)) expect(p.length).toBeLessThan(PIECE_BYTES * 4);
    for (const p of pieces.slice(0, -1)) expect(p.length).toBeGreaterThanOrEqual(PIECE_BYTES);
    const lines = Buffer.concat(pieces).toString('utf8').split('\n').filter(Boolean);
    expect(lines).toHaveLength(n);
    expect(lines[0]).toBe(`f${texts[0] as string} 1`);
    expect(lines).toEqual([...lines].sort());
  });
});

describe('joinSmall', () => {
  const bytes = (n: number, fill: number) => Buffer.alloc(n, fill);

  it('keeps large pieces as they are and joins runs of small ones, in order', () => {
    const big = bytes(PIECE_BYTES, 1);
    const small = [bytes(10, 2), bytes(20, 3), bytes(0, 9), bytes(30, 4)];
    const out = [...joinSmall([small[0] as Buffer, small[1] as Buffer, big, small[2] as Buffer, small[3] as Buffer])];
    expect(out).toHaveLength(3);
    expect(out[1]).toBe(big);
    expect(Buffer.concat(out).equals(Buffer.concat([...small.slice(0, 2), big, ...small.slice(2)]))).toBe(true);
  });

  it('ends a joined piece once it reaches PIECE_BYTES', () => {
    const small = Array.from({ length: 10 }, (_, i) => bytes(PIECE_BYTES / 4, i));
    const out = [...joinSmall(small)];
    expect(out.map((b) => b.length)).toEqual([PIECE_BYTES, PIECE_BYTES, PIECE_BYTES / 2]);
    expect(Buffer.concat(out).equals(Buffer.concat(small))).toBe(true);
  });
});
