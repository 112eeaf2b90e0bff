/**
 * The YAML file's structure, in zod, built from the tables of rules.ts. zod checks the structure
 * (closed mappings, lists); every value goes through the shared rules, so messages are ours, never
 * zod's "Invalid input".
 */
import { z } from 'zod';
import { type Check, describeValue, required } from './checks.js';
import { didYouMean, formatPath, type IssueList, type PathSegment, valueAt } from './issues.js';
import { CREDENTIALS, GLOBALS, IDENTITY, isKey, type Table, SETTINGS } from './rules.js';

/** A zod schema that runs one of our checks and reports its message as is. */
export function field<T>(check: Check<T>) {
  return z.unknown().transform((input, ctx): T => {
    const r = check(input);
    if (r.ok) return r.value;
    ctx.addIssue({ code: 'custom', message: r.message, path: [...(r.at ?? [])] });
    return z.NEVER;
  });
}

/** Every key optional; a nested table becomes a closed mapping. */
type OptionalFields<R extends Table> = {
  [K in keyof R]: R[K] extends { readonly check: Check<infer T> }
    ? z.ZodOptional<ReturnType<typeof field<T>>>
    : R[K] extends Table
      ? z.ZodOptional<z.ZodObject<OptionalFields<R[K]>, z.core.$strict>>
      : never;
};

/** Keys first, then the nested mappings: the order in which zod reports their problems. */
function optionalFields<R extends Table>(table: R): OptionalFields<R> {
  const entries = Object.entries(table);
  return Object.fromEntries([
    ...entries.flatMap(([k, entry]) => (isKey(entry) ? [[k, field(entry.check).optional()]] : [])),
    ...entries.flatMap(([k, entry]) => (isKey(entry) ? [] : [[k, z.strictObject(optionalFields(entry)).optional()]])),
  ]) as OptionalFields<R>;
}

const SETTINGS_SHAPE = optionalFields(SETTINGS);

export const defaultsSchema = z.strictObject(SETTINGS_SHAPE);

export const stackSchema = z.strictObject({
  name: field(required(IDENTITY.name.check)),
  baseUrl: field(required(IDENTITY.baseUrl.check)),
  ...optionalFields(CREDENTIALS),
  ...SETTINGS_SHAPE,
});

export const topSchema = z.strictObject({
  ...optionalFields(GLOBALS),
  defaults: z.unknown().optional(),
  stacks: z.unknown().optional(),
});

/** A stack with name and baseUrl optional: what is valid of a declaration that lacks one (StackSource.partial). */
export const stackPartsSchema = stackSchema.extend({
  name: field(IDENTITY.name.check).optional(),
  baseUrl: field(IDENTITY.baseUrl.check).optional(),
});

/** Per-stack settings as parsed, every key optional. */
export type Settings = z.output<typeof defaultsSchema>;
/** One stack as declared: identity, credentials and settings. */
export type StackInput = z.output<typeof stackSchema>;
/** What is valid of a stack declaration, whether or not it has its required keys. */
export type StackParts = z.output<typeof stackPartsSchema>;

const STACK_ONLY_KEYS = [...Object.keys(IDENTITY), ...Object.keys(CREDENTIALS)];
const STACK_KEYS = Object.keys(stackSchema.shape);

function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let s = schema;
  while (s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
  return s;
}

/** The keys a mapping at `path` (relative to `schema`) may have. */
function knownKeys(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let s = unwrap(schema);
  for (const seg of path) {
    if (s instanceof z.ZodObject) s = unwrap((s.shape as Record<string, z.ZodType>)[String(seg)]);
    else if (s instanceof z.ZodArray) s = unwrap(s.element as z.ZodType);
    else return [];
  }
  return s instanceof z.ZodObject ? Object.keys(s.shape) : [];
}

function unknownKeyMessage(key: string, known: readonly string[], where: string): string {
  if (where === '' && STACK_KEYS.includes(key)) {
    return 'unknown key at the top level; per-stack keys go in a stack under "stacks", or under "defaults"';
  }
  if (where === 'defaults' && STACK_ONLY_KEYS.includes(key)) {
    return 'not allowed under defaults; set name, baseUrl and credentials on each stack';
  }
  return `unknown key${didYouMean(key, known)}`;
}

const EXPECTED: Record<string, string> = { object: 'a mapping (key: value)', array: 'a list' };

/** A copy of `raw` without the value at `path` (the whole key for a bad value, or the unknown `keys`). */
function without(raw: unknown, path: readonly PropertyKey[], keys: readonly string[] = []): unknown {
  if (raw === null || typeof raw !== 'object') return raw;
  const copy: Record<PropertyKey, unknown> | unknown[] = Array.isArray(raw) ? [...raw] : { ...(raw as Record<PropertyKey, unknown>) };
  const target = copy as Record<PropertyKey, unknown>;
  const [head, ...rest] = path;
  if (head === undefined) {
    for (const k of keys) delete target[k];
    return copy;
  }
  // A list item is taken out, not left a hole: a check maps a hole to nothing and would read
  // undefined where the YAML had an item (a saved query's problem is reported at queries[i]).
  // A field's check reports one problem, so no other index of the same list shifts.
  if (rest.length === 0 && keys.length === 0) {
    if (Array.isArray(copy) && typeof head === 'number') copy.splice(head, 1);
    else delete target[head];
  } else target[head] = without(target[head], rest, keys);
  return copy;
}

/**
 * Parse one section (top level, defaults, one stack); turn zod's issues into ours. A section with
 * problems still yields the values that are right (bad values and unknown keys left out), so that
 * checks across keys and layers (timeouts in order, TLS files readable) report in the same round;
 * the load fails anyway, since the problems are in `issues`.
 */
export function parseSection<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  prefix: readonly PathSegment[],
  issues: IssueList,
): z.output<S> | undefined {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  let salvage = raw;
  for (const issue of result.error.issues) {
    const rel = issue.path.map((s) => (typeof s === 'number' ? s : String(s)));
    const at = formatPath([...prefix, ...rel]);
    if (issue.code === 'custom') {
      issues.add(at, issue.message);
      salvage = without(salvage, issue.path);
    } else if (issue.code === 'unrecognized_keys') {
      const known = knownKeys(schema, issue.path);
      for (const key of issue.keys) {
        issues.add(formatPath([...prefix, ...rel, key]), unknownKeyMessage(key, known, at));
      }
      salvage = without(salvage, issue.path, issue.keys);
    } else {
      const expected = issue.code === 'invalid_type' ? (EXPECTED[issue.expected] ?? issue.expected) : 'a valid value';
      issues.add(at, `must be ${expected}, got ${describeValue(valueAt(raw, issue.path))}`);
      salvage = without(salvage, issue.path);
    }
  }
  const rest = schema.safeParse(salvage);
  return rest.success ? rest.data : undefined;
}
