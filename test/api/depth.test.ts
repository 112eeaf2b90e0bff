/** Deep nesting in a body costs that one value, never a RangeError or a hang (issue 11 #7). */
import { describe, expect, it } from 'vitest';
import { capDepth } from '../../src/api/depth.js';

const nested = (depth: number): unknown => JSON.parse('['.repeat(depth) + ']'.repeat(depth));

function depthOf(value: unknown): number {
  let d = 0;
  for (let v = value; Array.isArray(v) && v.length > 0; v = v[0]) d++;
  return d;
}

describe('capDepth', () => {
  it('leaves a body of ordinary depth untouched, as the same object', () => {
    const body = { content: [{ bridge_name: 'a', profile: { profile_name: 'p' }, output_fields: ['x', ['y', { z: [1] }]] }] };
    const copy = structuredClone(body);
    expect(capDepth(body)).toBe(body);
    expect(body).toEqual(copy);
    expect(capDepth('text')).toBe('text');
    expect(capDepth(null)).toBeNull();
  });

  it('replaces what lies 32 or more levels down with null, at any depth, without recursion', () => {
    for (const depth of [40, 5_000, 200_000]) {
      const body = { content: [{ bridge_name: 'a', output_fields: ['ok', nested(depth)] }] };
      capDepth(body);
      // body(0) → content(1) → row(2) → output_fields(3) → nested list (4…): kept down to level 31.
      expect(depthOf(body.content[0]?.output_fields[1])).toBe(31 - 4 + 1);
      expect(body.content[0]?.output_fields[0]).toBe('ok');
      expect(() => JSON.stringify(body)).not.toThrow();
      expect(() => structuredClone(body)).not.toThrow();
    }
  });

  it('caps objects as well as lists', () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 10_000; i++) deep = (deep.next = {}) as Record<string, unknown>;
    capDepth(root, 3);
    expect(root).toEqual({ next: { next: { next: null } } });
  });
});
