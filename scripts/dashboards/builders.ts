/** Small builders for targets, selectors and the panel types the dashboards use. */
import type { DatasourceRef, Json, JsonObject, PanelDraft, Target } from './types.js';

export const DS: DatasourceRef = { type: 'prometheus', uid: '${datasource}' };

/**
 * Matchers every query carries: the exporter job(s), instance(s) (replicas, e.g. shards) and
 * stack(s) chosen on the dashboard.
 */
export const JOB = 'job=~"$job"';
export const INSTANCE = 'instance=~"$instance"';
export const STACK = 'stack=~"$stack"';

/** `metric{job=~"$job", instance=~"$instance", stack=~"$stack", extra}`: every family with `stack`. */
export function m(metric: string, extra = ''): string {
  return `${metric}{${JOB}, ${INSTANCE}, ${STACK}${extra ? `, ${extra}` : ''}}`;
}

/** `metric{job=~"$job", instance=~"$instance", extra}`: families without `stack` (process_*, up, …). */
export function mj(metric: string, extra = ''): string {
  return `${metric}{${JOB}, ${INSTANCE}${extra ? `, ${extra}` : ''}}`;
}

export interface TargetSpec {
  readonly expr: string;
  readonly legend?: string;
}

const REF_IDS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

function refId(index: number): string {
  const id = REF_IDS[index];
  if (id === undefined) throw new Error('a panel has more than 26 queries');
  return id;
}

export function targets(specs: readonly TargetSpec[], kind: 'range' | 'instant' = 'range'): Target[] {
  return specs.map((spec, i) => ({
    datasource: DS,
    refId: refId(i),
    expr: spec.expr,
    legendFormat: spec.legend ?? '__auto',
    editorMode: 'code',
    range: kind === 'range',
    instant: kind === 'instant',
    format: kind === 'range' ? 'time_series' : 'table',
  }));
}

export type Step = readonly [color: string, value: number | null];

export function thresholds(steps: readonly Step[]): JsonObject {
  return { mode: 'absolute', steps: steps.map(([color, value]) => ({ color, value })) };
}

/** Value → text (and colour) mappings, for 0/1 gauges and state codes. */
export function valueMappings(map: Readonly<Record<string, readonly [text: string, color: string]>>): Json[] {
  const options: JsonObject = {};
  Object.entries(map).forEach(([value, [text, color]], index) => {
    options[value] = { text, color, index };
  });
  return [{ type: 'value', options }];
}

/** Override that colours every field whose display name matches `pattern`. */
export function colorByName(pattern: string, color: string): JsonObject {
  return {
    matcher: { id: 'byRegexp', options: pattern },
    properties: [{ id: 'color', value: { mode: 'fixed', fixedColor: color } }],
  };
}

export function fieldOverride(name: string, properties: Readonly<Record<string, Json>>): JsonObject {
  return {
    matcher: { id: 'byName', options: name },
    properties: Object.entries(properties).map(([id, value]) => ({ id, value })),
  };
}

export const HEALTH_COLORS: ReadonlyArray<readonly [string, string]> = [
  ['ok', 'green'],
  ['warning', 'orange'],
  ['error', 'red'],
  ['unknown', 'text'],
];

interface Common {
  readonly title: string;
  readonly description: string;
  readonly unit?: string;
  readonly decimals?: number;
  readonly steps?: readonly Step[];
  readonly mappings?: readonly Json[];
  readonly overrides?: readonly JsonObject[];
}

function defaults(c: Common, extra: JsonObject = {}): JsonObject {
  const d: JsonObject = { ...extra };
  if (c.unit) d.unit = c.unit;
  if (c.decimals !== undefined) d.decimals = c.decimals;
  if (c.steps) d.thresholds = thresholds(c.steps);
  if (c.mappings) d.mappings = [...c.mappings];
  return d;
}

export function timeseries(c: Common & { queries: readonly TargetSpec[]; bars?: boolean }): PanelDraft {
  const custom: JsonObject = c.bars
    ? { drawStyle: 'bars', fillOpacity: 60, lineWidth: 1, showPoints: 'never' }
    : { drawStyle: 'line', fillOpacity: 10, lineWidth: 1, showPoints: 'never', spanNulls: false };
  if (c.steps) custom.thresholdsStyle = { mode: 'dashed' };
  return {
    type: 'timeseries',
    title: c.title,
    description: c.description,
    datasource: DS,
    targets: targets(c.queries),
    fieldConfig: {
      defaults: defaults(c, { color: { mode: 'palette-classic' }, custom }),
      overrides: [...(c.overrides ?? [])],
    },
    options: {
      legend: { displayMode: 'table', placement: 'bottom', showLegend: true, calcs: ['lastNotNull', 'max'] },
      tooltip: { mode: 'multi', sort: 'desc' },
    },
  };
}

export function stat(c: Common & { queries: readonly TargetSpec[]; textMode?: string }): PanelDraft {
  return {
    type: 'stat',
    title: c.title,
    description: c.description,
    datasource: DS,
    targets: targets(c.queries, 'instant'),
    fieldConfig: {
      defaults: defaults(c, { color: { mode: 'thresholds' } }),
      overrides: [...(c.overrides ?? [])],
    },
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      colorMode: 'background',
      graphMode: 'none',
      justifyMode: 'auto',
      orientation: 'auto',
      textMode: c.textMode ?? 'value_and_name',
      wideLayout: true,
      showPercentChange: false,
      percentChangeColorMode: 'standard',
    },
  };
}

export function stateTimeline(c: Common & { queries: readonly TargetSpec[] }): PanelDraft {
  return {
    type: 'state-timeline',
    title: c.title,
    description: c.description,
    datasource: DS,
    targets: targets(c.queries),
    fieldConfig: {
      defaults: defaults(c, { color: { mode: 'thresholds' }, custom: { fillOpacity: 80, lineWidth: 0 } }),
      overrides: [...(c.overrides ?? [])],
    },
    options: {
      showValue: 'never',
      mergeValues: true,
      rowHeight: 0.9,
      legend: { showLegend: false, displayMode: 'list', placement: 'bottom', calcs: [] },
      tooltip: { mode: 'single', sort: 'none' },
    },
  };
}

export function row(title: string, description: string): PanelDraft {
  return { type: 'row', title, description, collapsed: false, panels: [] };
}
