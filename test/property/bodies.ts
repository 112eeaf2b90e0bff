/**
 * Hostile response bodies for the property tests: entirely arbitrary JSON and text, and the
 * simulator's valid bodies with one to four mutations at random places — deep nesting, lone
 * surrogates, huge numbers, wrong types, missing fields, nulls, long strings.
 */
import fc from 'fast-check';

/** A raw JSON fragment to splice in where JSON.stringify cannot write it (1e400, 50,000 brackets). */
const RAW = '\u0000RAW';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const RAW_FRAGMENTS = [
  '1e400',
  '-1e400',
  '123456789012345678901234567890',
  '-0',
  '1.7976931348623157e308',
  '0.0000000000000000000000000001',
  '['.repeat(20_000) + ']'.repeat(20_000),
  '['.repeat(100_000) + '"deep"' + ']'.repeat(100_000),
  '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000),
  '[' + '{"a":['.repeat(30_000) + ']}'.repeat(30_000) + ']',
];

/** What replaces the value at the chosen place. */
type Replacement = { kind: 'delete' } | { kind: 'value'; value: Json } | { kind: 'raw'; text: string };

const replacement: fc.Arbitrary<Replacement> = fc.oneof(
  fc.constant({ kind: 'delete' as const }),
  fc.constantFrom(null, true, false, 0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2, -1e308, 1e-308, '', [], {}).map((value) => ({ kind: 'value' as const, value: value as Json })),
  fc.constantFrom('\uD800', 'x\uDC00y', 'run\uD83D', '\uDFFF\uD800', '%', '%E0%A4%A', '../..', '/', '\u0000', '\n"}\\').map((value) => ({
    kind: 'value' as const,
    value,
  })),
  fc.string({ unit: 'binary', maxLength: 40 }).map((value) => ({ kind: 'value' as const, value })),
  fc.integer({ min: 1000, max: 200_000 }).map((n) => ({ kind: 'value' as const, value: 'x'.repeat(n) })),
  fc.jsonValue({ maxDepth: 3 }).map((value) => ({ kind: 'value' as const, value: value as Json })),
  fc.constantFrom(...RAW_FRAGMENTS).map((text) => ({ kind: 'raw' as const, text })),
  fc.integer({ min: 100, max: 3_000 }).map((depth) => ({ kind: 'value' as const, value: nested(depth) })),
);

function nested(depth: number): Json {
  let value: Json = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { items: value };
  return value;
}

export interface Mutation {
  /** Choices that walk from the root to the place to mutate (each taken modulo the children there). */
  path: number[];
  what: Replacement;
}

const mutation: fc.Arbitrary<Mutation> = fc.record({ path: fc.array(fc.nat(), { maxLength: 8 }), what: replacement });

/** Every key name in the body (ids, statuses, field lists …), so that a mutation can hit one field everywhere. */
function keyNames(value: Json, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) keyNames(v, into);
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      into.add(k);
      keyNames(v, into);
    }
  }
  return into;
}

/** Sets `key` to the replacement wherever it occurs (every run's id, every Action's actionId, …). */
function mutateKey(value: Json, key: string, what: Replacement, raws: string[]): Json {
  if (Array.isArray(value)) return value.map((v) => mutateKey(v, key, what, raws));
  if (value === null || typeof value !== 'object') return value;
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(value)) {
    if (k !== key) out[k] = mutateKey(v, key, what, raws);
    else if (what.kind === 'value') out[k] = what.value;
    else if (what.kind === 'raw') {
      raws.push(what.text);
      out[k] = `${RAW}${raws.length - 1}\u0000`;
    }
  }
  return out;
}

/** Applies mutations to a deep copy of `body`; raw fragments come back as markers for `serialize`. */
function mutate(body: Json, mutations: readonly Mutation[], raws: string[]): Json {
  const root: { value: Json } = { value: structuredClone(body) };
  for (const m of mutations) {
    let parent: Json[] | { [key: string]: Json } = root as unknown as { [key: string]: Json };
    let key: string | number = 'value';
    for (const choice of m.path) {
      const current: Json | undefined = (parent as Record<string | number, Json>)[key];
      if (current === null || typeof current !== 'object') break;
      const keys: Array<string | number> = Array.isArray(current) ? current.map((_, i) => i) : Object.keys(current);
      if (keys.length === 0) break;
      parent = current;
      key = keys[choice % keys.length] as string | number;
    }
    const target = parent as Record<string | number, Json>;
    if (m.what.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else if (parent !== root) delete target[key];
      else target[key] = null;
    } else if (m.what.kind === 'value') {
      target[key] = m.what.value;
    } else {
      raws.push(m.what.text);
      target[key] = `${RAW}${raws.length - 1}\u0000`;
    }
  }
  return root.value;
}

function serialize(value: Json, raws: readonly string[]): string {
  return JSON.stringify(value).replace(/"\\u0000RAW(\d+)\\u0000"/g, (_, i: string) => raws[Number(i)] ?? 'null');
}

/** `valid` with `key` set to `value` wherever it occurs, or to the raw JSON text `raw` (deep nesting, 1e400). */
export function withKey(valid: string, key: string, replacement: { value: unknown } | { raw: string }): string {
  const raws: string[] = [];
  const what: Replacement = 'raw' in replacement ? { kind: 'raw', text: replacement.raw } : { kind: 'value', value: replacement.value as Json };
  return serialize(mutateKey(JSON.parse(valid) as Json, key, what, raws), raws);
}

/** A mutated copy of `valid` (its text), or an arbitrary body, or the valid body itself. */
export function hostileBody(valid: string): fc.Arbitrary<string> {
  const parsed = JSON.parse(valid) as Json;
  const keys = [...keyNames(parsed)];
  const everywhere =
    keys.length === 0
      ? fc.constant(valid)
      : fc.tuple(fc.constantFrom(...keys), replacement).map(([key, what]) => {
          const raws: string[] = [];
          return serialize(mutateKey(parsed, key, what, raws), raws);
        });
  return fc.oneof(
    { weight: 4, arbitrary: everywhere },
    { weight: 6, arbitrary: fc.array(mutation, { minLength: 1, maxLength: 4 }).map((ms) => {
      const raws: string[] = [];
      return serialize(mutate(parsed, ms, raws), raws);
    }) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    // Cut short, as a dropped connection leaves it.
    { weight: 1, arbitrary: fc.nat().map((n) => valid.slice(0, n % Math.max(1, valid.length))) },
    { weight: 1, arbitrary: fc.constant(valid) },
  );
}
