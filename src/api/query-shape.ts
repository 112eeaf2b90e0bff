/**
 * Saved queries as configured (`queries:` of a stack or of `defaults`), checked as far as they can
 * be without the CMDB: the shape of the API's body, operators, types, value kinds, relative days.
 * What needs the stack's field metadata is checked before each run (query-check.ts).
 */
import { didYouMean } from './closest.js';
import { operatorProblem, operatorTypeProblem, quote, valueProblem, valueProblemWithoutType } from './query-check.js';
import { isMapping } from './schemas.js';
import { DATA_TYPES, QUERY_TABLES, type Criterion, type CriterionValue, type DataType, type QueryTable, type SavedQuery } from './query.js';

type At = ReadonlyArray<string | number>;
/** The configuration's check result (src/config/checks.ts Result): a value, or a message at a path. */
export type ShapeResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string; readonly at?: At };

class ShapeProblem extends Error {
  constructor(
    message: string,
    readonly at: At,
  ) {
    super(message);
  }
}

const QUERY_KEYS = ['name', 'table', 'help', 'query', 'alertRiseRatio'];
const CRITERION_KEYS = ['searchFieldName', 'operator', 'type', 'value'];
/** A label value: printable, short enough for a legend. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is rejected
const NAME = /^[^\u0000-\u001f\u007f]{1,100}$/;
/** Far more than a stack needs; each query is one request per rebuild and a few series. */
export const MAX_QUERIES = 200;

function unknownKeys(value: Record<string, unknown>, known: readonly string[], at: At, what: string): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    throw new ShapeProblem(`unknown key${didYouMean(key, known)} (${what} has ${known.join(', ')})`, [...at, key]);
  }
}

function text(value: unknown, at: At, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ShapeProblem(`${what} must be non-empty text`, at);
  return value;
}

function dataType(value: unknown, at: At): DataType | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' && (DATA_TYPES as readonly string[]).includes(value)) return value as DataType;
  const match = typeof value === 'string' ? DATA_TYPES.find((t) => t.toLowerCase() === value.toLowerCase()) : undefined;
  const hint = match === undefined ? '' : `; write ${quote(match)} (the service answers 0 for a type spelt otherwise)`;
  throw new ShapeProblem(`must be one of ${DATA_TYPES.join(', ')}, or left out to take the field's own${hint}`, at);
}

function criterion(input: unknown, at: At): Criterion {
  if (Array.isArray(input)) throw new ShapeProblem('is a list inside a criterion list: over-nested (the service answers 0); a group is a list of criteria', at);
  if (!isMapping(input)) throw new ShapeProblem('must be a criterion: {searchFieldName, operator, type, value}', at);
  unknownKeys(input, CRITERION_KEYS, at, 'a criterion');
  const searchFieldName = text(input.searchFieldName, [...at, 'searchFieldName'], 'searchFieldName');
  const operator = text(input.operator, [...at, 'operator'], 'operator');
  const opProblem = operatorProblem(operator);
  if (opProblem !== undefined) throw new ShapeProblem(opProblem, [...at, 'operator']);
  const type = dataType(input.type, [...at, 'type']);
  if (type !== undefined) {
    const mismatch = operatorTypeProblem(operator, type);
    if (mismatch !== undefined) throw new ShapeProblem(mismatch, [...at, 'operator']);
  }
  const value = input.value as CriterionValue | undefined;
  const problem = type === undefined ? valueProblemWithoutType(operator, value) : valueProblem(type, operator, value);
  if (problem !== undefined) throw new ShapeProblem(problem, [...at, 'value']);
  return { searchFieldName, operator, ...(type === undefined ? {} : { type }), value: value ?? null };
}

function groups(input: unknown, at: At): Criterion[][] {
  const shape = 'must be a list of AND groups, each a list of OR-ed criteria: [[{searchFieldName, operator, type, value}]]';
  if (!Array.isArray(input) || input.length === 0) throw new ShapeProblem(shape, at);
  return input.map((group, g) => {
    if (isMapping(group)) throw new ShapeProblem(`is a criterion where an AND group (a list) belongs: under-nested (the service answers 0); ${shape}`, [...at, g]);
    if (!Array.isArray(group) || group.length === 0) throw new ShapeProblem(`must be a non-empty list of criteria (an OR group)`, [...at, g]);
    return group.map((c, i) => criterion(c, [...at, g, i]));
  });
}

/** A problem inside a query's criteria names the query too: the key path alone says only its index. */
function named<T>(name: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw err instanceof ShapeProblem ? new ShapeProblem(`query ${quote(name)}: ${err.message}`, err.at) : err;
  }
}

function savedQuery(input: unknown, at: At): SavedQuery {
  if (!isMapping(input)) throw new ShapeProblem('must be a mapping with name, table, query, and optional help and alertRiseRatio', at);
  unknownKeys(input, QUERY_KEYS, at, 'a saved query');
  const name = text(input.name, [...at, 'name'], 'name');
  if (!NAME.test(name)) throw new ShapeProblem('must be at most 100 characters without control characters (it is the query label)', [...at, 'name']);
  const table = input.table;
  if (typeof table !== 'string' || !(QUERY_TABLES as readonly string[]).includes(table)) {
    const hint = typeof table === 'string' ? didYouMean(table, QUERY_TABLES) : '';
    throw new ShapeProblem(`must be ${QUERY_TABLES.join(' or ')}${hint}`, [...at, 'table']);
  }
  const help = input.help === undefined ? undefined : text(input.help, [...at, 'help'], 'help');
  const query = named(name, () => groups(input.query, [...at, 'query']));
  const rise = input.alertRiseRatio;
  if (rise !== undefined && (typeof rise !== 'number' || !Number.isFinite(rise) || rise <= 0 || rise > 100)) {
    throw new ShapeProblem('must be a share above 0 and at most 100 (0.2: the count rose by more than 20 % between two rebuilds)', [...at, 'alertRiseRatio']);
  }
  return { name, table: table as QueryTable, ...(help === undefined ? {} : { help }), query, ...(rise === undefined ? {} : { alertRiseRatio: rise }) };
}

/** The `queries` list of a stack: every query checked as far as it can be without the CMDB; names unique. */
export function parseSavedQueries(input: unknown): ShapeResult<SavedQuery[]> {
  if (!Array.isArray(input)) return { ok: false, message: 'must be a list of saved queries (name, table, query, help, alertRiseRatio)' };
  if (input.length > MAX_QUERIES) return { ok: false, message: `must hold at most ${MAX_QUERIES} queries, got ${input.length}` };
  try {
    const out = input.map((q, i) => savedQuery(q, [i]));
    const seen = new Set<string>();
    for (const [i, q] of out.entries()) {
      if (seen.has(q.name)) throw new ShapeProblem(`${quote(q.name)} names another query too: names are the query label and must be unique`, [i, 'name']);
      seen.add(q.name);
    }
    return { ok: true, value: out };
  } catch (err) {
    if (err instanceof ShapeProblem) return { ok: false, message: err.message, at: err.at };
    throw err;
  }
}
