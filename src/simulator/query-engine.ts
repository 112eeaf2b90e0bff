/**
 * POST /CMDB/v2/data/cmdb as the real service answers it (docs/cmdb-api-notes.md, "The data query
 * endpoint"), traps included:
 * - silent zeros: a quoted number for an Integer/Float field, a `type` that is not the field's, a
 *   misspelt field, a wrong-case value for `==`/`in` (a Binary text other than exactly "True",
 *   "False", "Yes", "No" included), an over- or under-nested query: 200 with
 *   `totalRecords: 0` (the criterion matches nothing), never an error;
 * - `within past` / `not within past`: 400 "Invalid operator"; the other windowed operators answer
 *   200 and ignore the window (`within`, `within future`: every record with a value; `not within`,
 *   `not within future`: none);
 * - an operator the type does not take: 400 with the platform's sub-code (400001 numeric, 400002
 *   string, 400003 Boolean);
 * - paging: `recordsPerPage` defaults to 20, more than 100 is clamped to 100, 0 or less resets to
 *   20; a page past the end carries the count and no record.
 */
import { FIELDS, type DataRecord, type FieldSpec, type FieldValue, type Records, type TableName } from './data/records.js';
import { errorReply, json, type Reply } from './http-io.js';

type Criterion = Record<string, unknown>;
type Match = (record: DataRecord) => boolean;

const NONE: Match = () => false;
const OPERATORS: Readonly<Record<FieldSpec['dataType'], readonly string[]>> = {
  Binary: ['==', '!=', 'exists', 'empty'],
  Integer: ['==', '!=', '>=', '>', '<=', '<', 'exists', 'empty'],
  Float: ['==', '!=', '>=', '>', '<=', '<', 'exists', 'empty'],
  String: ['match', 'not match', '==', '!=', 'exists', 'empty'],
  List: ['match', 'not match', 'in', 'not in', 'length gt', 'length lt', 'length eq', 'exists', 'empty'],
  Datetime: ['==', '>=', '>', '<=', '<', 'exists', 'empty'],
};
/** Accepted, window ignored: true = every record with a value, false = none. */
const IGNORED_WINDOW: Readonly<Record<string, boolean>> = { within: true, 'within future': true, 'not within': false, 'not within future': false };
const REFUSED_WINDOW = new Set(['within past', 'not within past']);
const SUB_CODE: Readonly<Record<string, [number, string]>> = {
  Integer: [400001, 'invalid numeric operator'],
  Float: [400001, 'invalid numeric operator'],
  String: [400002, 'invalid string operator'],
  List: [400002, 'invalid string operator'],
  Binary: [400003, 'invalid Boolean operator'],
  Datetime: [400, 'Invalid operator'],
};

class Refusal extends Error {
  constructor(readonly code: number) {
    super();
  }
}

const present = (v: FieldValue | undefined): boolean => v !== null && v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0);

/**
 * The Binary spellings the service answers to (values "True"/"Yes"/1 seen), compared exactly: a
 * wrong case or a space (`"true"`, `" Yes "`) matches nothing, the silent 0.
 */
const BINARY_TEXT: Readonly<Record<string, boolean>> = { True: true, Yes: true, False: false, No: false };

function binary(value: unknown): boolean | undefined {
  if (value === 1 || value === true) return true;
  if (value === 0 || value === false) return false;
  return typeof value === 'string' && Object.hasOwn(BINARY_TEXT, value) ? BINARY_TEXT[value] : undefined;
}

/** `yyyy-mm-dd HH:MM:SS` as UTC ms; a bare date lands at an unspecified point of the day (here: noon). */
function instant(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^(\d{4}-\d{2}-\d{2})(?: (\d{2}:\d{2}:\d{2}))?$/.exec(value.trim());
  const ms = m ? Date.parse(`${m[1]}T${m[2] ?? '12:00:00'}Z`) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

function compare(op: string, a: number, b: number): boolean {
  return op === '==' ? a === b : op === '!=' ? a !== b : op === '>=' ? a >= b : op === '>' ? a > b : op === '<=' ? a <= b : a < b;
}

function textMatch(pattern: string): (text: string) => boolean {
  try {
    const re = new RegExp(pattern, 'i');
    return (text) => re.test(text);
  } catch {
    return (text) => text.toLowerCase().includes(pattern.toLowerCase());
  }
}

/** One criterion of a field whose `type` is right: the comparison, with the service's value rules. */
function valueMatch(spec: FieldSpec, op: string, value: unknown): Match {
  const name = spec.fieldName;
  if (op === 'exists') return (r) => present(r[name]);
  if (op === 'empty') return (r) => !present(r[name]);
  if (op in IGNORED_WINDOW) return IGNORED_WINDOW[op] ? (r) => present(r[name]) : NONE;
  switch (spec.dataType) {
    case 'Binary': {
      const want = binary(value);
      return want === undefined ? NONE : (r) => (op === '==') === (r[name] === want);
    }
    case 'Integer':
    case 'Float':
      // A quoted number is no number: the silent zero.
      return typeof value === 'number' ? (r) => typeof r[name] === 'number' && compare(op, r[name], value) : NONE;
    case 'Datetime': {
      const at = instant(value);
      return at === undefined ? NONE : (r) => {
        const t = instant(r[name]);
        return t !== undefined && compare(op, t, at);
      };
    }
    case 'String':
      if (typeof value !== 'string') return NONE;
      if (op === 'match' || op === 'not match') {
        const test = textMatch(value);
        return (r) => (op === 'match') === (typeof r[name] === 'string' && test(r[name]));
      }
      return (r) => (op === '==') === (r[name] === value);
    case 'List':
      return listMatch(name, op, value);
  }
}

function listMatch(name: string, op: string, value: unknown): Match {
  const items = (r: DataRecord): string[] => (Array.isArray(r[name]) ? (r[name] as string[]) : []);
  if (op.startsWith('length ')) {
    if (typeof value !== 'number') return NONE;
    return (r) => compare(op === 'length gt' ? '>' : op === 'length lt' ? '<' : '==', items(r).length, value);
  }
  if (op === 'in' || op === 'not in') {
    const wanted = Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? value.split(',').map((v) => v.trim()) : [];
    if (wanted.length === 0) return NONE;
    return (r) => (op === 'in') === items(r).some((v) => wanted.includes(v));
  }
  if (typeof value !== 'string') return NONE;
  const test = textMatch(value);
  return (r) => (op === 'match') === items(r).some(test);
}

function criterion(c: unknown, fields: ReadonlyMap<string, FieldSpec>): Match {
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return NONE; // over-nested: nothing
  const { searchFieldName, operator, type, value } = c as Criterion;
  if (typeof operator !== 'string') return NONE;
  if (REFUSED_WINDOW.has(operator)) throw new Refusal(400);
  const declared = typeof type === 'string' ? OPERATORS[type as FieldSpec['dataType']] : undefined;
  if (declared && !declared.includes(operator) && !(type === 'Datetime' && operator in IGNORED_WINDOW)) {
    throw new Refusal((SUB_CODE[type as string] as [number, string])[0]);
  }
  const spec = typeof searchFieldName === 'string' ? fields.get(searchFieldName) : undefined;
  if (!spec || type !== spec.dataType) return NONE; // a misspelt field or a wrong type: nothing
  if (!OPERATORS[spec.dataType].includes(operator) && !(spec.dataType === 'Datetime' && operator in IGNORED_WINDOW)) return NONE;
  return valueMatch(spec, operator, value);
}

/** The AND of OR groups; an under-nested query (criteria where groups belong) matches nothing. */
function queryMatch(query: unknown[], fields: ReadonlyMap<string, FieldSpec>): Match {
  const groups = query.map((group) => (Array.isArray(group) ? group.map((c) => criterion(c, fields)) : [NONE]));
  return (r) => groups.every((ors) => ors.some((m) => m(r)));
}

function paging(body: Record<string, unknown>): { page: number; size: number } {
  const p = (body.paging ?? {}) as Record<string, unknown>;
  const page = typeof p.page === 'number' && Number.isInteger(p.page) && p.page > 0 ? p.page : 0;
  const asked = typeof p.recordsPerPage === 'number' && Number.isInteger(p.recordsPerPage) ? p.recordsPerPage : 20;
  return { page, size: asked <= 0 ? 20 : Math.min(asked, 100) };
}

const MESSAGES: Readonly<Record<number, string>> = { 400: 'Invalid operator', 400001: 'invalid numeric operator', 400002: 'invalid string operator', 400003: 'invalid Boolean operator' };

/** The answer to one data query body (JSON text) over `records`. */
export function dataQuery(records: Records, text: string): Reply {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return errorReply(400, 'Malformed request body: not JSON');
  }
  const b = (body !== null && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  if (b.table !== 'asset' && b.table !== 'user') return errorReply(400, 'table must be one of asset, user');
  if (!Array.isArray(b.query)) return errorReply(400, 'query must be a list of criteria groups');
  const table: TableName = b.table;
  const fields = new Map(FIELDS[table].map((s) => [s.fieldName, s]));
  let match: Match;
  try {
    match = queryMatch(b.query, fields);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return json(400, { code: err.code, message: MESSAGES[err.code] ?? 'Invalid operator' });
  }
  const hits = records[table].records().filter(match);
  const { page, size } = paging(b);
  return json(200, { totalRecords: hits.length, data: hits.slice(page * size, (page + 1) * size), totalPages: Math.ceil(hits.length / size), recordsPerPage: size, page });
}
