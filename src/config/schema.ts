/**
 * The YAML file's structure, in zod. zod checks the structure (closed mappings, lists); every value
 * goes through the shared rules of rules.ts, so messages are ours, never zod's "Invalid input".
 */
import { z } from 'zod';
import { type Check, describeValue, required } from './checks.js';
import { didYouMean } from './suggest.js';
import { formatPath, type IssueList, type PathSegment } from './issues.js';
import {
  CREDENTIAL_RULES,
  GLOBAL_RULES,
  IDENTITY_RULES,
  INTERVAL_RULES,
  PAGING_RULES,
  RETRY_RULES,
  SETTING_RULES,
  TLS_RULES,
  TRACK_RULES,
} from './rules.js';

/** A zod schema that runs one of our checks and reports its message as is. */
export function field<T>(check: Check<T>) {
  return z.unknown().transform((input, ctx): T => {
    const r = check(input);
    if (r.ok) return r.value;
    ctx.addIssue({ code: 'custom', message: r.message, path: [...(r.at ?? [])] });
    return z.NEVER;
  });
}

type Output<C> = C extends Check<infer T> ? T : never;
type OptionalFields<R> = { [K in keyof R]: z.ZodOptional<ReturnType<typeof field<Output<R[K]>>>> };

function optionalFields<R extends Record<string, Check<unknown>>>(rules: R): OptionalFields<R> {
  return Object.fromEntries(Object.entries(rules).map(([k, check]) => [k, field(check).optional()])) as OptionalFields<R>;
}

const section = <R extends Record<string, Check<unknown>>>(rules: R) => z.strictObject(optionalFields(rules)).optional();

const SETTINGS_SHAPE = {
  ...optionalFields(SETTING_RULES),
  retries: section(RETRY_RULES),
  tls: section(TLS_RULES),
  paging: section(PAGING_RULES),
  track: section(TRACK_RULES),
  intervals: section(INTERVAL_RULES),
};

export const defaultsSchema = z.strictObject(SETTINGS_SHAPE);

export const stackSchema = z.strictObject({
  name: field(required(IDENTITY_RULES.name)),
  baseUrl: field(required(IDENTITY_RULES.baseUrl)),
  ...optionalFields(CREDENTIAL_RULES),
  ...SETTINGS_SHAPE,
});

export const topSchema = z.strictObject({
  ...optionalFields(GLOBAL_RULES),
  defaults: z.unknown().optional(),
  stacks: z.unknown().optional(),
});

/** Per-stack settings as parsed, every key optional. */
export type Settings = z.output<typeof defaultsSchema>;
/** One stack as declared: identity, credentials and settings. */
export type StackInput = z.output<typeof stackSchema>;

const STACK_ONLY_KEYS = [...Object.keys(IDENTITY_RULES), ...Object.keys(CREDENTIAL_RULES)];
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

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const seg of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[seg] : undefined;
  return v;
}

const EXPECTED: Record<string, string> = { object: 'a mapping (key: value)', array: 'a list' };

/** Parse one section (top level, defaults, one stack); turn zod's issues into ours. */
export function parseSection<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  prefix: readonly PathSegment[],
  issues: IssueList,
): z.output<S> | undefined {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  for (const issue of result.error.issues) {
    const rel = issue.path.map((s) => (typeof s === 'number' ? s : String(s)));
    const at = formatPath([...prefix, ...rel]);
    if (issue.code === 'custom') {
      issues.add(at, issue.message);
    } else if (issue.code === 'unrecognized_keys') {
      const known = knownKeys(schema, issue.path);
      for (const key of issue.keys) {
        issues.add(formatPath([...prefix, ...rel, key]), unknownKeyMessage(key, known, at));
      }
    } else {
      const expected = issue.code === 'invalid_type' ? (EXPECTED[issue.expected] ?? issue.expected) : 'a valid value';
      issues.add(at, `must be ${expected}, got ${describeValue(valueAt(raw, issue.path))}`);
    }
  }
  return undefined;
}
