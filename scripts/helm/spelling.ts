/**
 * The right spelling of a misspelt key, where values.schema.json can give it. JSON Schema cannot
 * compute a nearest name, but it can recognise a key written in another case or with `_` or `-`
 * (`baseURL`, `base_url`, `BaseUrl`, `existingsecret`: the usual slips with camelCase keys) and say
 * which key that is. Every closed mapping gets a `propertyNames` rule per key: a name of that key's
 * spelling must be the key itself, so Helm's refusal names it beside "additional properties
 * 'baseURL' not allowed": "invalid propertyName 'baseURL' … value must be 'baseUrl'" (Helm 4) or
 * `does not match: "baseUrl"` (Helm 3). Other typos (`secretFiel`) get the schema's refusal alone.
 *
 * The patterns spell case with character classes rather than `(?i)`, which JavaScript validators
 * (editors that check values files against the schema) do not take.
 */
import type { JsonSchema } from './config-schema.js';

/** `baseUrl` → `[bB][aA][sS][eE][_-]?[uU][rR][lL]`: any case, a `_` or `-` between words. */
export function spellingPattern(key: string): string {
  const words = key.split(/[_-]|(?<=[a-z0-9])(?=[A-Z])/).filter((w) => w !== '');
  const letters = (word: string) =>
    [...word].map((c) => (c.toLowerCase() === c.toUpperCase() ? c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : `[${c.toLowerCase()}${c.toUpperCase()}]`)).join('');
  return `^${words.map(letters).join('[_-]?')}$`;
}

function hints(keys: readonly string[]): JsonSchema | undefined {
  const byPattern = new Map<string, string[]>();
  for (const key of keys) byPattern.set(spellingPattern(key), [...(byPattern.get(spellingPattern(key)) ?? []), key]);
  const rules = [...byPattern].map(([pattern, same]) => ({ if: { pattern }, then: same.length === 1 ? { const: same[0] } : { enum: same } }));
  return rules.length === 0 ? undefined : { allOf: rules };
}

/** `schema` with a spelling rule on every closed mapping (additionalProperties: false), at any depth. */
export function withSpellingHints(schema: JsonSchema): JsonSchema {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === 'default' || k === 'const' || k === 'enum' ? v : walk(v)])) as JsonSchema;
    const props = out.properties;
    if (out.additionalProperties === false && props !== null && typeof props === 'object') {
      const rule = hints(Object.keys(props));
      if (rule) out.propertyNames = rule;
    }
    return out;
  };
  return walk(schema) as JsonSchema;
}

/** values.schema.json's text: indented, with each spelling rule on one line of its own. */
export function schemaText(schema: JsonSchema): string {
  const rules: string[] = [];
  const text = JSON.stringify(
    schema,
    (key, value: unknown) => {
      if (key !== 'propertyNames' || value === null || typeof value !== 'object') return value;
      const { allOf } = value as { allOf: unknown[] };
      return { allOf: allOf.map((rule) => `\u0000${rules.push(JSON.stringify(rule)) - 1}\u0000`) };
    },
    2,
  );
  return `${text.replace(/"\\u0000(\d+)\\u0000"/g, (_, i: string) => rules[Number(i)] ?? '')}\n`;
}
