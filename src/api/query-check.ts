/**
 * The rules a criterion must meet before it is sent, so that a malformed query is refused with a
 * reason instead of answered with a confident 0 (docs/cmdb-api-notes.md, "Silent zeros"). The
 * configuration checks what it can without the CMDB (query-shape.ts); `prepareQuery` checks the
 * rest against the stack's field metadata before each run and builds what is sent.
 */
import { didYouMean } from './closest.js';
import { absoluteRanges, datetimeProblem, relativeDay, relativeDays, resolveDatetime } from './query-dates.js';
import {
  DATA_TYPES,
  KNOWN_OPERATORS,
  OPERATORS,
  PRESENCE_OPERATORS,
  WINDOWED_OPERATORS,
  windowedOperator,
  type Criterion,
  type CriterionValue,
  type DataType,
  type FieldTypes,
  type SavedQuery,
  type SentCriterion,
} from './query.js';

export const quote = (text: string): string => JSON.stringify(text);

/** A value for a message: short, since it is the user's own text. */
function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Why `operator` may never be sent (windowed, unknown), or undefined. */
export function operatorProblem(operator: string): string | undefined {
  const windowed = windowedOperator(operator);
  if (windowed !== undefined) {
    return (
      `operator ${quote(operator)} is refused: the service answers "within past" and "not within past" with 400 and ` +
      `ignores the window of the other windowed operators (a confident wrong count); write the absolute form: ${WINDOWED_OPERATORS[windowed]}`
    );
  }
  if (KNOWN_OPERATORS.includes(operator)) return undefined;
  return `unknown operator ${quote(operator)}${didYouMean(operator, KNOWN_OPERATORS)}; the service takes ${KNOWN_OPERATORS.join(', ')}`;
}

/** Why `operator` does not fit a field of `type`, or undefined. */
export function operatorTypeProblem(operator: string, type: DataType): string | undefined {
  if (OPERATORS[type].includes(operator)) return undefined;
  return `operator ${quote(operator)} is not one the service takes for a ${type} field (it takes ${OPERATORS[type].join(', ')})`;
}

const BINARY_WORDS: ReadonlySet<string> = new Set(['true', 'false', 'yes', 'no']);
const NUMERIC_TEXT = /^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

function quotedNumber(value: CriterionValue, what: string): string | undefined {
  if (typeof value !== 'string' || !NUMERIC_TEXT.test(value)) return undefined;
  return `${show(value)} is a quoted number: the service answers 0 for a quoted number on ${what}; write ${value.trim()} without quotes`;
}

function numberProblem(type: 'Integer' | 'Float', value: CriterionValue): string | undefined {
  const quoted = quotedNumber(value, type === 'Integer' ? 'an Integer field' : 'a Float field');
  if (quoted !== undefined) return quoted;
  if (typeof value !== 'number' || !Number.isFinite(value)) return `${show(value)} is not a number (the field is ${type})`;
  return type === 'Integer' && !Number.isInteger(value) ? `${show(value)} is not a whole number (the field is Integer)` : undefined;
}

/** A Binary value as true or false, whatever the accepted spelling (a YAML boolean, 1/0, " Yes "); else undefined. */
export function binaryValue(value: CriterionValue): boolean | undefined {
  if (value === true || value === 1) return true;
  if (value === false || value === 0) return false;
  if (typeof value !== 'string') return undefined;
  const word = value.trim().toLowerCase();
  return BINARY_WORDS.has(word) ? word === 'true' || word === 'yes' : undefined;
}

function binaryProblem(value: CriterionValue): string | undefined {
  if (binaryValue(value) !== undefined) return undefined;
  return `${show(value)} is not a Binary value: write "True" or "False" ("Yes"/"No", 1/0 and a YAML true/false are sent as "True"/"False" too)`;
}

/** The relative day `days` from today as it is written in a query: "today", "-3d", "+1d". */
function dayText(days: number): string {
  return days === 0 ? 'today' : `${days > 0 ? '+' : '-'}${Math.abs(days)}d`;
}

/** The range to write for `==` (two AND groups) or `!=` (one OR group) from `from` to `to`, values as written in a query. */
function rangeToWrite(operator: string, what: string, from: string, to: string): string {
  return operator === '=='
    ? `${what} is two AND groups: [[{operator ">=", value ${quote(from)}}], [{operator "<", value ${quote(to)}}]]`
    : `outside ${what} is one OR group: [[{operator "<", value ${quote(from)}}, {operator ">=", value ${quote(to)}}]]`;
}

/**
 * Why `==` or `!=` on a Datetime is refused: a value stands for one second, compared exactly, where
 * the day's range was meant; the message names that range (docs/queries.md).
 */
export function datetimeEqualityProblem(operator: string, value: CriterionValue | undefined): string | undefined {
  if ((operator !== '==' && operator !== '!=') || typeof value !== 'string') return undefined;
  const days = relativeDays(value);
  if (days !== undefined) {
    return (
      `${show(value)} with "${operator}" is refused: a relative day stands for 00:00:00 of ${relativeDay(days)}, so "${operator}" compares with that ` +
      `one second (a count of 0 that looks true); ${rangeToWrite(operator, 'the whole day', dayText(days), dayText(days + 1))}`
    );
  }
  const ranges = absoluteRanges(value);
  if (ranges === undefined) return undefined;
  const text = value.trim();
  const day = text === ranges.day ? 'the whole day' : 'the whole day it falls in';
  return (
    `${show(value)} with "${operator}" is refused: "${operator}" compares with that one second exactly (a count of 0 that looks true); ` +
    `${rangeToWrite(operator, day, ranges.day, ranges.nextDay)}; ${rangeToWrite(operator, 'that one second alone', text, ranges.nextSecond)}`
  );
}

function listProblem(operator: string, value: CriterionValue): string | undefined {
  if (operator.startsWith('length ')) {
    const quoted = quotedNumber(value, `"${operator}"`);
    if (quoted !== undefined) return quoted;
    return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? undefined : `${show(value)} is not a count: "${operator}" takes a whole number`;
  }
  if (operator === 'in' || operator === 'not in') {
    if (typeof value === 'string') return value.trim() === '' ? `"${operator}" needs at least one value` : undefined;
    if (!Array.isArray(value) || value.length === 0) return `${show(value)} is not a list of values: "${operator}" takes a list of text or comma-separated text`;
    const number = value.find((v) => typeof v !== 'string');
    // Values of a List field are text and compared exactly: 22 never equals "22".
    return number === undefined ? undefined : `${show(number)} is not text: the values of a List field are text, compared exactly; write ${quote(String(number))}`;
  }
  return typeof value === 'string' ? undefined : `${show(value)} is not text: "${operator}" takes text`;
}

/** Why `value` is not of the kind `operator` on a field of `type` takes, or undefined. */
export function valueProblem(type: DataType, operator: string, value: CriterionValue | undefined): string | undefined {
  if (PRESENCE_OPERATORS.has(operator)) return value == null ? undefined : `"${operator}" takes value: null, got ${show(value)}`;
  if (value == null) return `operator ${quote(operator)} needs a value`;
  switch (type) {
    case 'Binary':
      return binaryProblem(value);
    case 'Integer':
    case 'Float':
      return numberProblem(type, value);
    case 'String':
      return typeof value === 'string' ? undefined : `${show(value)} is not text (the field is String): quote it`;
    case 'List':
      return listProblem(operator, value);
    case 'Datetime':
      if (typeof value !== 'string') return `${show(value)} is not a time: write "yyyy-mm-dd HH:MM:SS" or a day relative to today ("today", "-30d", "+90d")`;
      return datetimeProblem(value) ?? datetimeEqualityProblem(operator, value);
  }
}

/**
 * What can be told of a value without the field's type (the configuration's check): the operator
 * alone says what kind it needs, or at least what it cannot be.
 */
export function valueProblemWithoutType(operator: string, value: CriterionValue | undefined): string | undefined {
  if (PRESENCE_OPERATORS.has(operator) || operator === 'in' || operator === 'not in' || operator.startsWith('length ')) {
    return valueProblem('List', operator, value);
  }
  if (value == null) return `operator ${quote(operator)} needs a value`;
  // Without a type a relative day or a `yyyy-mm-dd HH:MM:SS` is a Datetime's (a String field holding
  // such text says type: String).
  const equality = datetimeEqualityProblem(operator, value);
  if (equality !== undefined) return `${equality} (for a String field holding this text, write type: String)`;
  if (operator === 'match' || operator === 'not match') return typeof value === 'string' ? undefined : `${show(value)} is not text: "${operator}" takes text`;
  if (['>', '>=', '<', '<='].includes(operator)) {
    // A number field (Integer, Float) or a Datetime: a quoted number is wrong for both.
    const quoted = quotedNumber(value, 'a number field');
    if (quoted !== undefined) return quoted;
    if (typeof value === 'number') return undefined;
    return typeof value === 'string' ? datetimeProblem(value) : `${show(value)} is neither a number nor a time`;
  }
  return undefined;
}

function isDataType(type: string): type is DataType {
  return (DATA_TYPES as readonly string[]).includes(type);
}

/** Why one criterion cannot be sent against these fields, or undefined. */
function criterionRefusal(c: Criterion, fields: FieldTypes, table: string): string | undefined {
  const fieldType = fields.get(c.searchFieldName);
  if (fieldType === undefined) {
    const hint = didYouMean(c.searchFieldName, [...fields.keys()]);
    return `no field ${quote(c.searchFieldName)} in this stack's ${table} metadata (names are exact and case-sensitive; the service answers 0 for a misspelt field)${hint}`;
  }
  if (!isDataType(fieldType)) return `the field's dataType ${quote(fieldType)} is not one whose values can be checked (${DATA_TYPES.join(', ')})`;
  if (c.type !== undefined && c.type !== fieldType) {
    return `type ${quote(c.type)} is not the field's: ${c.searchFieldName} is ${fieldType} in the metadata (the service answers 0 for a wrong type); write "${fieldType}" or leave type out`;
  }
  return operatorProblem(c.operator) ?? operatorTypeProblem(c.operator, fieldType) ?? valueProblem(fieldType, c.operator, c.value);
}

/** A value as sent: a relative day resolved, a Binary value in any accepted spelling as the service's "True"/"False", `exists`/`empty` with null. */
function sentValue(c: Criterion, type: DataType, nowSeconds: number, timeZone: string): CriterionValue {
  if (PRESENCE_OPERATORS.has(c.operator)) return null;
  // The service compares Binary text exactly: every accepted spelling is sent as its own.
  if (type === 'Binary') return binaryValue(c.value) ? 'True' : 'False';
  if (type === 'Datetime' && typeof c.value === 'string') return resolveDatetime(c.value, nowSeconds, timeZone);
  return c.value;
}

export type Prepared = { readonly ok: true; readonly query: SentCriterion[][] } | { readonly ok: false; readonly reason: string };

/**
 * The query as it is sent at `nowSeconds`, each criterion with its field's type and its value
 * resolved; or why it is refused, naming the query and the first criterion that fails.
 */
export function prepareQuery(saved: SavedQuery, fields: FieldTypes, nowSeconds: number, timeZone: string): Prepared {
  const sent: SentCriterion[][] = [];
  for (const [g, group] of saved.query.entries()) {
    const out: SentCriterion[] = [];
    for (const [i, c] of group.entries()) {
      const problem = criterionRefusal(c, fields, saved.table);
      const where = `criterion [${g}][${i}] (${c.searchFieldName} ${c.operator})`;
      if (problem !== undefined) return { ok: false, reason: `query ${quote(saved.name)}: ${where}: ${problem}` };
      const type = fields.get(c.searchFieldName) as DataType;
      out.push({ searchFieldName: c.searchFieldName, operator: c.operator, type, value: sentValue(c, type, nowSeconds, timeZone) });
    }
    sent.push(out);
  }
  return { ok: true, query: sent };
}
