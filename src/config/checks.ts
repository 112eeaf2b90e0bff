/**
 * Value checks shared by the YAML schema and the environment variables, so that one key gets the
 * same rules and the same message wherever it is set. A check never throws: it returns the parsed
 * value or a plain message saying what was expected and what came instead.
 *
 * Values arrive as YAML scalars, or as text (environment variables, `${VAR}` expansions), so
 * numbers and booleans are also accepted as text.
 */
import { formatDuration, parseDuration } from './durations.js';

export type Result<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly message: string; readonly at?: readonly (string | number)[] };
export type Check<T> = (input: unknown) => Result<T>;

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = (message: string, at?: readonly (string | number)[]): Result<never> =>
  at === undefined ? { ok: false, message } : { ok: false, message, at };

/** A short, quoted description of a value for messages. Never use it on a secret. */
export function describeValue(input: unknown): string {
  if (typeof input === 'string') return JSON.stringify(input.length > 80 ? `${input.slice(0, 77)}...` : input);
  if (typeof input === 'number' || typeof input === 'boolean' || input === null) return String(input);
  if (input === undefined) return 'nothing';
  return Array.isArray(input) ? 'a list' : 'a mapping';
}

/** The kind of a value, safe to print for a secret. */
export function kindOf(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'a list';
  return typeof input === 'object' ? 'a mapping' : `a ${typeof input}`;
}

/** A required value: `undefined` (key absent) is reported as missing. */
export function required<T>(check: Check<T>): Check<T> {
  return (input) => (input === undefined ? fail('is required') : check(input));
}

/** A string; `secret` keeps the value out of every message. */
export function text(opts: { secret?: boolean; allowEmpty?: boolean } = {}): Check<string> {
  return (input) => {
    if (typeof input !== 'string') {
      const quoteHint = typeof input === 'number' || typeof input === 'boolean' ? ' (quote it in YAML)' : '';
      const got = opts.secret ? kindOf(input) : describeValue(input);
      return fail(`must be a string, got ${got}${quoteHint}`);
    }
    if (!opts.allowEmpty && input.trim() === '') return fail('must not be empty');
    return ok(input);
  };
}

/** Run `next` on the value `first` produced. (Not named `then`: a module exporting `then` is a thenable, and awaiting its import hangs.) */
export function andThen<A, B>(first: Check<A>, next: (value: A, input: unknown) => Result<B>): Check<B> {
  return (input) => {
    const r = first(input);
    return r.ok ? next(r.value, input) : r;
  };
}

const NUMERIC = /^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

function toNumber(input: unknown): number | undefined {
  if (typeof input === 'number') return Number.isFinite(input) ? input : undefined;
  if (typeof input === 'string' && NUMERIC.test(input.trim())) return Number(input.trim());
  return undefined;
}

/** The number `read` makes of the input, when it is in [min, max]; else "must be <expected>, got …". */
function ranged(read: (input: unknown) => number | undefined, min: number, max: number, expected: string): Check<number> {
  return (input) => {
    const n = read(input);
    return n === undefined || n < min || n > max ? fail(`must be ${expected}, got ${describeValue(input)}`) : ok(n);
  };
}

/** A finite number in [min, max]; `integer` for counts. */
export function numberIn(min: number, max: number, opts: { integer?: boolean } = {}): Check<number> {
  const read = (input: unknown): number | undefined => {
    const n = toNumber(input);
    return n === undefined || (opts.integer && !Number.isInteger(n)) ? undefined : n;
  };
  return ranged(read, min, max, `${opts.integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
}

/** Seconds, written as a number or as a duration ('30s', '5m'), in [min, max] seconds. */
export function secondsIn(min: number, max: number): Check<number> {
  const range = `from ${formatDuration(min)} to ${formatDuration(max)}`;
  return ranged(parseDuration, min, max, `a duration ${range} (a number of seconds, or e.g. "30s", "5m")`);
}

const BYTE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};
const SIZE = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i;

/**
 * A byte count: a number, or text such as '256MiB', '512 KiB', '10MB' (decimal units) or '1024'.
 * Malformed or negative values give undefined; fractions of a byte are rounded down.
 */
function parseByteSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const m = SIZE.exec(value.trim());
  if (!m) return undefined;
  const unit = BYTE_UNITS[(m[2] ?? '').toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isFinite(bytes) ? bytes : undefined;
}

function formatBytes(bytes: number): string {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes} bytes`;
}

/** A byte count, written as a number or as text such as '256MiB', in [min, max]. */
export function bytesIn(min: number, max: number): Check<number> {
  const range = `from ${formatBytes(min)} to ${formatBytes(max)}`;
  return ranged(parseByteSize, min, max, `a size ${range} (a number of bytes, or e.g. "256MiB")`);
}

const TRUE = new Set(['true', '1']);
const FALSE = new Set(['false', '0']);

export const bool: Check<boolean> = (input) => {
  if (typeof input === 'boolean') return ok(input);
  const word = typeof input === 'string' || typeof input === 'number' ? String(input).trim().toLowerCase() : '';
  if (TRUE.has(word)) return ok(true);
  if (FALSE.has(word)) return ok(false);
  return fail(`must be true or false (or 1 or 0), got ${describeValue(input)}`);
};

export function oneOf<const T extends string>(values: readonly T[]): Check<T> {
  return (input) =>
    typeof input === 'string' && (values as readonly string[]).includes(input)
      ? ok(input as T)
      : fail(`must be one of ${values.join(', ')}, got ${describeValue(input)}`);
}
