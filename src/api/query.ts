/**
 * The CMDB's data query language (`POST /CMDB/v2/data/cmdb`) as the real service speaks it: the
 * tables, the field data types of its metadata, the operators each type takes, and the windowed
 * Datetime operators that must never be sent. How the service answers (silent zeros, the ignored
 * window, counting with a page past the end): docs/cmdb-api-notes.md, "The data query endpoint".
 */

/** The tables a saved query may count (the service also has `*_history` and `*_ip` tables: not counted here). */
export const QUERY_TABLES = ['asset', 'user'] as const;
export type QueryTable = (typeof QUERY_TABLES)[number];

/** `dataType` of the field metadata, spelt with an initial capital as the service writes it. */
export const DATA_TYPES = ['Binary', 'Datetime', 'Float', 'Integer', 'List', 'String'] as const;
export type DataType = (typeof DATA_TYPES)[number];

export type CriterionValue = string | number | boolean | null | ReadonlyArray<string | number>;

/** One criterion as configured: in the API's own shape, `type` optional (taken from the field metadata). */
export interface Criterion {
  readonly searchFieldName: string;
  readonly operator: string;
  readonly type?: DataType;
  readonly value: CriterionValue;
}

/** The outer list is AND, each inner list OR: `[[A, B], [C]]` is (A OR B) AND C. */
export type QueryGroups = ReadonlyArray<ReadonlyArray<Criterion>>;

/** A saved query of the configuration: `name` is the `query` label of its series. */
export interface SavedQuery {
  readonly name: string;
  readonly table: QueryTable;
  readonly help?: string;
  readonly query: QueryGroups;
  /** Opt in to the CmdbQueryCountRose alert: it fires when the count rises by more than this share between two rebuilds. */
  readonly alertRiseRatio?: number;
}

/** A criterion as sent: the service reads exactly these four keys; `type` is the field's own. */
export type SentCriterion = Required<Criterion>;

const PRESENCE = ['exists', 'empty'] as const;
const NUMERIC = ['==', '!=', '>=', '>', '<=', '<', ...PRESENCE];

/** Operators by field type, as documented; `exists` and `empty` take `value: null`. */
export const OPERATORS: Readonly<Record<DataType, readonly string[]>> = {
  Binary: ['==', '!=', ...PRESENCE],
  Integer: NUMERIC,
  Float: NUMERIC,
  String: ['match', 'not match', '==', '!=', ...PRESENCE],
  List: ['match', 'not match', 'in', 'not in', 'length gt', 'length lt', 'length eq', ...PRESENCE],
  Datetime: ['==', '>=', '>', '<=', '<', ...PRESENCE],
};

export const KNOWN_OPERATORS: readonly string[] = [...new Set(Object.values(OPERATORS).flat())];
export const PRESENCE_OPERATORS: ReadonlySet<string> = new Set(PRESENCE);

/**
 * The windowed Datetime operators, refused before anything is sent, and the absolute form to write
 * instead: the service answers two with 400 and ignores the window of the others (docs/queries.md).
 */
export const WINDOWED_OPERATORS: Readonly<Record<string, string>> = {
  'within past': 'operator ">=" with a relative value such as "-30d" (on or after the start of the day 30 days ago)',
  'not within past': 'operator "<" with a relative value such as "-30d" (before the start of the day 30 days ago)',
  'within future': 'two AND groups, [[{operator ">=", value "today"}], [{operator "<", value "+90d"}]]',
  'not within future': 'one OR group, [[{operator "<", value "today"}, {operator ">=", value "+90d"}]]',
  within: 'two AND groups, [[{operator ">=", value "-30d"}], [{operator "<", value "+1d"}]]',
  'not within': 'one OR group, [[{operator "<", value "-30d"}, {operator ">=", value "+1d"}]]',
};

/** The windowed operator `operator` names (any case and spacing), or undefined. */
export function windowedOperator(operator: string): string | undefined {
  const key = operator.trim().toLowerCase().replace(/\s+/g, ' ');
  return key in WINDOWED_OPERATORS ? key : undefined;
}

/** A page past the end: it carries `totalRecords` and no record (docs/queries.md, "Counted, not downloaded"). */
export const COUNT_PAGE = 99_999;
/** The smallest page the service allows (0 or less resets to its default of 20). */
export const COUNT_RECORDS_PER_PAGE = 1;

/** The body of a count request: one record per page, at `page`. */
export function countRequestBody(table: QueryTable, query: ReadonlyArray<ReadonlyArray<SentCriterion>>, page: number) {
  return { table, query, paging: { page, recordsPerPage: COUNT_RECORDS_PER_PAGE } };
}

/** The field metadata of one table: field name (exact, case-sensitive) → its dataType. */
export type FieldTypes = ReadonlyMap<string, string>;

/**
 * What the last run of one saved query left, for its collector: `ok` with the count and the rebuild
 * it belongs to; `refused` (checked against the field metadata and not sent) or `failed` (the
 * request failed, or the metadata could not be read): no count, never yesterday's.
 */
export interface QueryOutcome {
  readonly state: 'ok' | 'refused' | 'failed';
  readonly records?: number;
  /** When the data the count was taken from was rebuilt (unix seconds); absent when not known. */
  readonly rebuiltAt?: number;
  /** When the query was last run or refused (unix seconds). */
  readonly ranAt?: number;
  /** The count of the rebuild before (the last count against an earlier rebuild), with `records`. */
  readonly previousRecords?: number;
  /** The query's alertRiseRatio, when it opted in to the alert. */
  readonly alertRiseRatio?: number;
}
