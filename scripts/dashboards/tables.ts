/**
 * Tables built from instant queries joined by Grafana's `merge` transformation: each query adds
 * its labels and value as columns, rows with equal label values become one row.
 */
import { DS, targets } from './builders.js';
import type { Json, JsonObject, PanelDraft } from './types.js';

export interface Column {
  readonly expr: string;
  /** Header of the value column; without it the value is hidden (the query adds labels only). */
  readonly name?: string;
  /** Field config properties of the value column, e.g. unit, decimals, mappings. */
  readonly props?: Readonly<Record<string, Json>>;
}

export interface TableSpec {
  readonly title: string;
  readonly description: string;
  /** Label columns in display order; labels not listed are hidden. */
  readonly labels: readonly string[];
  /** Label renames for headers, e.g. { action_id: 'Action' }. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly columns: readonly Column[];
  /** Extra overrides, matched on the displayed (renamed) header. */
  readonly overrides?: readonly JsonObject[];
}

function valueField(refId: string, single: boolean): string {
  return single ? 'Value' : `Value #${refId}`;
}

export function table(spec: TableSpec): PanelDraft {
  const queries = targets(spec.columns.map((c) => ({ expr: c.expr, legend: '__auto' })), 'instant');
  const single = queries.length === 1;
  const exclude: JsonObject = { Time: true, __name__: true, job: true, instance: true };
  const rename: JsonObject = { ...spec.headers };
  const index: JsonObject = {};
  spec.labels.forEach((label, i) => {
    index[label] = i;
  });
  const overrides: JsonObject[] = [];
  spec.columns.forEach((column, i) => {
    const query = queries[i];
    if (!query) return;
    const field = valueField(query.refId, single);
    if (!column.name) {
      exclude[field] = true;
      return;
    }
    rename[field] = column.name;
    index[field] = spec.labels.length + i;
    if (column.props) {
      overrides.push({
        matcher: { id: 'byName', options: column.name },
        properties: Object.entries(column.props).map(([id, value]) => ({ id, value })),
      });
    }
  });
  return {
    type: 'table',
    title: spec.title,
    description: spec.description,
    datasource: DS,
    targets: queries,
    fieldConfig: {
      defaults: { custom: { align: 'auto', cellOptions: { type: 'auto' }, inspect: false } },
      overrides: [...overrides, ...(spec.overrides ?? [])],
    },
    options: { showHeader: true, cellHeight: 'sm', frameIndex: 0 },
    transformations: [
      { id: 'merge', options: {} },
      { id: 'organize', options: { excludeByName: exclude, indexByName: index, renameByName: rename } },
    ],
  };
}

/** A value column shown as "5 minutes ago" from a unix time in seconds (the query multiplies by 1000). */
export const FROM_NOW: Readonly<Record<string, Json>> = { unit: 'dateTimeFromNow' };

/** Colours the cell text of a state column (e.g. health) by its value. */
export function stateCell(map: ReadonlyArray<readonly [string, string]>): Readonly<Record<string, Json>> {
  const options: JsonObject = {};
  map.forEach(([value, color], index) => {
    options[value] = { color, index };
  });
  return {
    'custom.cellOptions': { type: 'color-text' },
    mappings: [{ type: 'value', options }],
  };
}
