/** The part of Grafana's dashboard JSON model that the generator writes (schemaVersion 39). */

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface DatasourceRef {
  readonly type: 'prometheus';
  readonly uid: '${datasource}';
}

export interface Target {
  readonly datasource: DatasourceRef;
  readonly refId: string;
  readonly expr: string;
  readonly legendFormat: string;
  readonly editorMode: 'code';
  readonly range: boolean;
  readonly instant: boolean;
  readonly format: 'time_series' | 'table';
}

export interface GridPos {
  readonly h: number;
  readonly w: number;
  readonly x: number;
  readonly y: number;
}

/** A panel before the layout gives it an id and a place. */
export interface PanelDraft {
  readonly type: string;
  readonly title: string;
  /** What the panel shows and what to do when the value looks wrong. */
  readonly description: string;
  readonly datasource?: DatasourceRef;
  readonly targets?: readonly Target[];
  readonly fieldConfig?: JsonObject;
  readonly options?: JsonObject;
  readonly transformations?: readonly JsonObject[];
  readonly collapsed?: boolean;
  readonly panels?: readonly Panel[];
}

export type Panel = { readonly id: number; readonly gridPos: GridPos } & PanelDraft;

export interface Variable {
  readonly name: string;
  readonly label: string;
  readonly type: 'datasource' | 'query';
  readonly query: string;
  readonly description: string;
  readonly datasource?: DatasourceRef;
  readonly multi: boolean;
  readonly includeAll: boolean;
  readonly allValue?: string;
  readonly current?: JsonObject;
  readonly options: readonly Json[];
  readonly refresh: number;
  readonly regex: string;
  readonly sort?: number;
  readonly hide: number;
}

export interface Dashboard {
  readonly uid: string;
  readonly title: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly editable: boolean;
  readonly graphTooltip: number;
  readonly refresh: string;
  readonly schemaVersion: number;
  readonly version: number;
  readonly time: { readonly from: string; readonly to: string };
  readonly timezone: string;
  readonly annotations: { readonly list: readonly Json[] };
  readonly links: readonly JsonObject[];
  readonly templating: { readonly list: readonly Variable[] };
  readonly panels: readonly Panel[];
}
