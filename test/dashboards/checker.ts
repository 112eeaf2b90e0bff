/**
 * Static checks of Grafana dashboards without Grafana: every PromQL query parses, uses only
 * metrics the exporter (or Prometheus, or our recording rules) provides, and follows the
 * dashboard conventions (datasource variable, job/stack matchers, $__rate_interval, unique ids,
 * a description on every panel). Each check returns human-readable problems; none means pass.
 * Grafana's dashboard-linter rules are ported beside it (linter.ts, run with the .lint exclusions by
 * test/mixin/lint.test.ts), and the JSON is type-checked against @grafana/schema (schema.ts).
 */
import { GRAFANA_VALUES, analyse, refersTo } from './promql.js';
import type { MetricInfo } from './metrics.js';

type Obj = Record<string, unknown>;

export const DATASOURCE_REF = { type: 'prometheus', uid: '${datasource}' } as const;

/** One PromQL query of a dashboard and the variables it need not filter on. */
export interface QueryUse {
  readonly where: string;
  readonly expr: string;
  readonly exempt: readonly string[];
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Panels in order, rows' nested panels included. */
export function allPanels(dashboard: Obj): Obj[] {
  return list(dashboard.panels).filter(isObj).flatMap((p) => [p, ...list(p.panels).filter(isObj)]);
}

function variables(dashboard: Obj): Obj[] {
  return isObj(dashboard.templating) ? list(dashboard.templating.list).filter(isObj) : [];
}

/** The PromQL inside a Grafana query variable, or a problem when it has none to check. */
export function variableQuery(query: string): { expr?: string; problem?: string } {
  const labelValues = /^\s*label_values\((.*),\s*[A-Za-z_]\w*\s*\)\s*$/s.exec(query);
  if (labelValues) return { expr: labelValues[1] ?? '' };
  if (/^\s*label_values\(\s*[A-Za-z_]\w*\s*\)\s*$/.test(query)) {
    return { problem: 'label_values(label) without a metric selector cannot be limited to the job' };
  }
  const result = /^\s*query_result\((.*)\)\s*$/s.exec(query);
  if (result) return { expr: result[1] ?? '' };
  if (/^\s*(metrics|label_names)\(/.test(query)) return { problem: `unsupported variable query ${query}` };
  return { expr: query };
}

export function dashboardQueries(dashboard: Obj): { uses: QueryUse[]; problems: string[] } {
  const uses: QueryUse[] = [];
  const problems: string[] = [];
  for (const v of variables(dashboard)) {
    if (v.type !== 'query') continue;
    const name = str(v.name);
    const query = isObj(v.query) ? str(v.query.query) : str(v.query);
    const { expr, problem } = variableQuery(query);
    if (problem) problems.push(`variable $${name}: ${problem}`);
    if (expr !== undefined) uses.push({ where: `variable $${name}`, expr, exempt: [name] });
  }
  for (const panel of allPanels(dashboard)) {
    for (const t of list(panel.targets).filter(isObj)) {
      uses.push({ where: `panel ${String(panel.id)} "${str(panel.title)}" target ${str(t.refId)}`, expr: str(t.expr), exempt: [] });
    }
  }
  return { uses, problems };
}

/** Parse, known metrics and labels, job/stack matchers and $__rate_interval for one query. */
export function checkQuery(use: QueryUse, known: ReadonlyMap<string, MetricInfo>): string[] {
  const at = (msg: string) => `${use.where}: ${msg}`;
  const result = analyse(use.expr, GRAFANA_VALUES);
  const problems = result.errors.map(at);
  for (const sel of result.selectors) {
    if (!sel.metric) {
      problems.push(at(`selector ${sel.text} names no metric`));
      continue;
    }
    const info = known.get(sel.metric);
    if (!info) {
      problems.push(at(`unknown metric ${sel.metric}`));
      continue;
    }
    for (const mt of sel.matchers) {
      if (info.labels && !['job', 'instance', '__name__'].includes(mt.label) && !info.labels.has(mt.label)) {
        problems.push(at(`${sel.metric} has no label ${mt.label}`));
      }
    }
    const needs = (label: string) => {
      if (use.exempt.includes(label)) return;
      const ok = sel.matchers.some((mt) => mt.label === label && mt.op === '=~' && refersTo(mt.rawValue, label));
      if (!ok) problems.push(at(`${sel.text} lacks ${label}=~"$${label}"`));
    };
    needs('job');
    if (info.hasStack) needs('stack');
  }
  for (const call of result.rateCalls) {
    if (!/^\[\s*(\$__rate_interval|\$\{__rate_interval\})\s*\]$/.test(call.range)) {
      problems.push(at(`${call.fn}() must use [$__rate_interval], has ${call.range || 'no range'}`));
    }
  }
  return problems;
}

/** Every `datasource` and `uid` below the dashboard's own uid must be the ${datasource} variable. */
function hardCodedDatasources(node: unknown, path: string, problems: string[]): void {
  if (Array.isArray(node)) {
    node.forEach((child, i) => hardCodedDatasources(child, `${path}[${i}]`, problems));
    return;
  }
  if (!isObj(node)) return;
  for (const [key, value] of Object.entries(node)) {
    const here = `${path}.${key}`;
    if (key === 'datasource' && !(isObj(value) && value.type === DATASOURCE_REF.type && value.uid === DATASOURCE_REF.uid)) {
      problems.push(`${here}: datasource must be ${JSON.stringify(DATASOURCE_REF)}, is ${JSON.stringify(value)}`);
    } else if (key === 'uid' && path !== '' && value !== DATASOURCE_REF.uid) {
      problems.push(`${here}: hard-coded uid ${JSON.stringify(value)}`);
    }
    hardCodedDatasources(value, here, problems);
  }
}

function checkVariables(dashboard: Obj): string[] {
  const problems: string[] = [];
  const vars = variables(dashboard);
  const ds = vars.find((v) => v.name === 'datasource');
  if (!ds || ds.type !== 'datasource' || ds.query !== 'prometheus') {
    problems.push('needs a variable "datasource" of type datasource with query prometheus');
  }
  for (const name of ['job', 'stack']) {
    const v = vars.find((x) => x.name === name);
    if (!v || v.type !== 'query' || v.multi !== true || v.includeAll !== true) {
      problems.push(`needs a multi-select query variable "${name}" with All`);
    }
  }
  for (const v of vars.filter((x) => x.type === 'query')) {
    if (!isObj(v.datasource)) problems.push(`variable $${str(v.name)} has no datasource`);
  }
  return problems;
}

function checkPanels(dashboard: Obj): string[] {
  const problems: string[] = [];
  const ids = new Set<unknown>();
  for (const panel of allPanels(dashboard)) {
    const name = `panel ${String(panel.id)} "${str(panel.title)}"`;
    if (typeof panel.id !== 'number' || ids.has(panel.id)) problems.push(`${name}: id missing or not unique`);
    ids.add(panel.id);
    if (str(panel.description).trim().length < 20) problems.push(`${name}: needs a description saying what to do`);
    if (!isObj(panel.gridPos)) problems.push(`${name}: no gridPos`);
    if (panel.type === 'row') continue;
    const targets = list(panel.targets).filter(isObj);
    if (targets.length === 0) problems.push(`${name}: no queries`);
    if (!isObj(panel.datasource)) problems.push(`${name}: no datasource`);
    for (const t of targets) {
      if (!isObj(t.datasource)) problems.push(`${name} target ${str(t.refId)}: no datasource`);
      if (str(t.expr).trim() === '') problems.push(`${name} target ${str(t.refId)}: empty expr`);
    }
  }
  return problems;
}

/** Every problem of one dashboard. */
export function checkDashboard(dashboard: Obj, known: ReadonlyMap<string, MetricInfo>): string[] {
  const problems = [...checkVariables(dashboard), ...checkPanels(dashboard)];
  hardCodedDatasources(dashboard, '', problems);
  const { uses, problems: queryProblems } = dashboardQueries(dashboard);
  problems.push(...queryProblems);
  for (const use of uses) problems.push(...checkQuery(use, known));
  return problems;
}

/** Problems of a set of dashboards, each prefixed with its file, plus duplicate uids. */
export function checkDashboards(files: ReadonlyMap<string, Obj>, known: ReadonlyMap<string, MetricInfo>): string[] {
  const problems: string[] = [];
  const uids = new Map<string, string>();
  for (const [file, dashboard] of files) {
    const uid = str(dashboard.uid);
    if (!uid) problems.push(`${file}: no uid`);
    const other = uids.get(uid);
    if (other) problems.push(`${file}: uid ${uid} also used by ${other}`);
    uids.set(uid, file);
    problems.push(...checkDashboard(dashboard, known).map((p) => `${file}: ${p}`));
  }
  return problems;
}
