/**
 * The exporter's configuration file as JSON Schema, for the Helm chart's values.schema.json: the
 * structure comes from the zod schema the daemon loads with (src/config/schema.ts, through zod's
 * z.toJSONSchema: every mapping closed, `name` and `baseUrl` required on a stack), and each key's
 * JSON types and default from its entry in the key tables (src/config/rules.ts).
 *
 * The zod schema checks each value with a function of ours (a transform zod cannot describe), so
 * the JSON types a key takes are found by asking that very function: a type is allowed when the
 * check accepts a value of it (the key's default, its text form, or a sample below). So the chart
 * never refuses what the daemon accepts (`"5m"` for an interval, `"true"` for a switch), and
 * refuses what it never would (a mapping for a number, an unknown key). Ranges, URLs and names are
 * still checked where the daemon checks them, at start-up, with messages naming the key.
 */
import { z } from 'zod';
import { defaultsSchema, stackSchema, topSchema } from '../../src/config/schema.js';
import { CREDENTIALS, GLOBALS, IDENTITY, isKey, SETTINGS, type Table } from '../../src/config/rules.js';

export type JsonSchema = Record<string, unknown>;
type JsonType = 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';

/** Keys the chart sets itself: its container port and its state volume. */
export const CHART_MANAGED_KEYS = ['listenAddress', 'storagePath'] as const;

/** Values of each type that the checks of optional keys (which have no default to try) accept. */
const SAMPLES: Record<JsonType, readonly unknown[]> = {
  boolean: [true, false],
  integer: [1, 30],
  number: [0.5],
  string: ['x', 'https://cmdb.example.com', 'display_name,asc'],
  array: [[]],
  object: [{}],
};

function samplesOf(type: JsonType, fallback: unknown): unknown[] {
  const own: unknown[] = [];
  if (type === 'string' && fallback !== undefined && !Array.isArray(fallback)) own.push(String(fallback));
  if (type === 'integer' && typeof fallback === 'number') own.push(fallback);
  if (type === 'number' && typeof fallback === 'number') own.push(fallback + 0.5);
  if (type === 'array' && Array.isArray(fallback)) own.push(fallback);
  return [...own, ...SAMPLES[type]];
}

type Entry = { check: (input: unknown) => { ok: boolean }; optional: boolean; default: unknown };

/** The JSON Schema of one key: the types its check accepts, its default. */
export function keySchema(path: string, entry: Entry): JsonSchema {
  const fallback = entry.optional ? undefined : entry.default;
  if (fallback !== undefined && !entry.check(fallback).ok) throw new Error(`${path}: its own default is refused by its check`);
  const accepts = (type: JsonType) => samplesOf(type, fallback).some((v) => entry.check(v).ok);
  const types = (['boolean', 'integer', 'number', 'string', 'array', 'object'] as const).filter(accepts);
  // "number" takes whole numbers too.
  const merged = types.includes('number') ? types.filter((t) => t !== 'integer') : types;
  if (merged.length === 0) throw new Error(`${path}: no sample value passes its check; add one of the right type to SAMPLES in scripts/helm/config-schema.ts`);
  const schema: JsonSchema = { type: merged.length === 1 ? merged[0] : merged };
  if (fallback !== undefined) schema.default = fallback;
  return schema;
}

function toJson(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-7' }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** Fills the leaves of `json` (an object schema from zod) from `table`; throws on a key of one without the other. */
function fill(json: JsonSchema, table: Table, prefix: string): JsonSchema {
  const props = (json.properties ?? {}) as Record<string, JsonSchema>;
  for (const [name, schema] of Object.entries(props)) {
    const entry = table[name];
    const path = prefix === '' ? name : `${prefix}.${name}`;
    if (entry === undefined) throw new Error(`${path}: in the zod schema but in no key table`);
    if (isKey(entry)) props[name] = keySchema(path, entry as Entry);
    else fill(schema, entry, path);
  }
  for (const name of Object.keys(table)) {
    if (!(name in props)) throw new Error(`${prefix === '' ? '' : `${prefix}.`}${name}: in the key table but not in the zod schema`);
  }
  return json;
}

/** The configuration file's schema, without the keys the chart sets itself. */
export function configSchema(): JsonSchema {
  const top = fill(toJson(topSchema.omit({ defaults: true, stacks: true })), GLOBALS, '');
  const props = top.properties as Record<string, JsonSchema>;
  for (const key of CHART_MANAGED_KEYS) delete props[key];
  props.defaults = { ...fill(toJson(defaultsSchema), SETTINGS, 'defaults'), description: 'Per-stack settings applied under every stack.' };
  props.stacks = {
    type: 'array',
    description: 'The CMDB instances to poll.',
    items: fill(toJson(stackSchema), { ...IDENTITY, ...CREDENTIALS, ...SETTINGS }, 'stacks[]'),
  };
  return top;
}
