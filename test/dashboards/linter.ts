/**
 * A port of grafana/dashboard-linter's rules (lint/rule_*.go, the rule set of lint/rules.go, which
 * `mixtool lint` runs over a mixin's grafanaDashboards too), so that `npm test` holds the dashboards
 * to them without the Go binary. Each rule keeps its upstream name, the panel types it applies to and
 * its message; docs/monitoring.md ("Lint rules") lists them and where this port is stricter. PromQL is
 * parsed with @prometheus-io/lezer-promql after Grafana's variables are replaced (upstream: the
 * Prometheus Go parser; scripts/test-rules.sh also parses every query with promtool).
 */
import { variableQuery } from './checker.js';
import { GRAFANA_VALUES, analyse } from './promql.js';
import type { FindingContext } from '../mixin/lint-config.js';

type Obj = Record<string, unknown>;

export interface DashboardFinding extends FindingContext {
  readonly severity: 'error' | 'warning';
  readonly message: string;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** lint/rule_panel_units.go validUnits: Grafana's unit ids (packages/grafana-data valueFormats/categories.ts). */
export const VALID_UNITS: ReadonlySet<string> = new Set(
  [
    'none string short percent percentunit humidity dB hex0x hex sci locale pixel',
    'accMS2 accFS2 accG degree radian grad arcmin arcsec areaM2 areaF2 areaMI2',
    'flops mflops gflops tflops pflops eflops zflops yflops',
    'ppm conppb conngm3 conngNm3 conμgm3 conμgNm3 conmgm3 conmgNm3 congm3 congNm3 conmgdL conmmolL',
    'currencyUSD currencyGBP currencyEUR currencyJPY currencyRUB currencyUAH currencyBRL currencyDKK currencyISK currencyNOK currencySEK currencyCZK currencyCHF currencyPLN currencyBTC currencymBTC currencyμBTC currencyZAR currencyINR currencyKRW currencyIDR currencyPHP currencyVND',
    'bytes decbytes bits decbits kbytes deckbytes mbytes decmbytes gbytes decgbytes tbytes dectbytes pbytes decpbytes',
    'pps binBps Bps binbps bps KiBs Kibits KBs Kbits MiBs Mibits MBs Mbits GiBs Gibits GBs Gbits TiBs Tibits TBs Tbits PiBs Pibits PBs Pbits',
    'dateTimeAsIso dateTimeAsIsoNoDateIfToday dateTimeAsUS dateTimeAsUSNoDateIfToday dateTimeAsLocal dateTimeAsLocalNoDateIfToday dateTimeAsSystem dateTimeFromNow',
    'watt kwatt megwatt gwatt mwatt Wm2 voltamp kvoltamp voltampreact kvoltampreact watth watthperkg kwatth kwattm amph kamph mamph joule ev amp kamp mamp volt kvolt mvolt dBm ohm kohm Mohm farad µfarad nfarad pfarad ffarad henry mhenry µhenry lumens',
    'flowgpm flowcms flowcfs flowcfm litreh flowlpm flowmlpm lux forceNm forcekNm forceN forcekN Hs KHs MHs GHs THs PHs EHs',
    'massmg massg masslb masskg masst lengthmm lengthin lengthft lengthm lengthkm lengthmi',
    'pressurembar pressurebar pressurekbar pressurepa pressurehpa pressurekpa pressurehg pressurepsi',
    'radbq radci radgy radrad radsv radmsv radusv radrem radexpckg radr radsvh radmsvh radusvh rotrpm rothz rotrads rotdegs',
    'celsius fahrenheit kelvin hertz ns µs ms s m h d dtdurationms dtdurations dthms dtdhms timeticks clockms clocks',
    'cps ops reqps rps wps iops cpm opm rpm wpm mps mpm velocityms velocitykmh velocitymph velocityknot',
    'mlitre litre m3 Nm3 dm3 gallons bool bool_yes_no bool_on_off',
  ].flatMap((line) => line.split(' ')),
);

/** lint/constants.go and the type lists each rule switches on. */
const QUERY_PANELS = ['stat', 'singlestat', 'graph', 'table', 'timeseries', 'gauge'];
const DATASOURCE_PANELS = ['singlestat', 'graph', 'table', 'timeseries'];
/** rule_target_promql.go panelHasQueries. */
const PROMQL_PANELS = ['singlestat', 'gauge', 'table', 'stat', 'state-timeline', 'timeseries'];
const TEMPLATE_FUNCTIONS = ['label_names', 'label_values', 'metrics', 'query_result'];

/** Panels in the order of lint.go GetPanels: each panel, then the panels nested in it (rows). */
function panelsOf(d: Obj): Obj[] {
  const flat = (p: Obj): Obj[] => [p, ...list(p.panels).filter(isObj).flatMap(flat)];
  return [...list(d.rows).filter(isObj).flatMap((r) => list(r.panels).filter(isObj).flatMap(flat)), ...list(d.panels).filter(isObj).flatMap(flat)];
}

const templates = (d: Obj): Obj[] => (isObj(d.templating) ? list(d.templating.list).filter(isObj) : []);
const templateQuery = (t: Obj): string => (isObj(t.query) ? str(t.query.query) : str(t.query));
/** lint.go GetDataSource: a string is the uid; an object must carry a string uid. */
const datasourceUid = (ds: unknown): string | undefined => (ds === undefined || ds === null ? '' : typeof ds === 'string' ? ds : isObj(ds) && typeof ds.uid === 'string' ? ds.uid : undefined);
/** The first datasource variable, whose query (plugin type) decides whether the Prometheus rules apply. */
const datasourceTemplate = (d: Obj): Obj | undefined => templates(d).find((t) => t.type === 'datasource');
const isPrometheus = (d: Obj): boolean => templateQuery(datasourceTemplate(d) ?? {}) === 'prometheus';
const titleCase = (s: string): string => s.replace(/\b\w/g, (c) => c.toUpperCase());

interface Ctx {
  readonly d: Obj;
  readonly out: DashboardFinding[];
  readonly title: string;
}

function add(c: Ctx, rule: string, message: string, where: { panel?: Obj; targetIdx?: number } = {}, severity: 'error' | 'warning' = 'error'): void {
  const panel = where.panel ? str(where.panel.title) : undefined;
  const prefix = panel !== undefined ? `Dashboard '${c.title}', panel '${panel}'` : `Dashboard '${c.title}'`;
  const target = where.targetIdx !== undefined ? `, target idx '${where.targetIdx}'` : '';
  c.out.push({
    rule,
    severity,
    message: `${prefix}${target} ${message}`,
    dashboard: c.title,
    ...(panel !== undefined ? { panel } : {}),
    ...(where.targetIdx !== undefined ? { targetIdx: where.targetIdx } : {}),
  });
}

function templateDatasourceRule(c: Ctx): void {
  const rule = 'template-datasource-rule';
  const ds = templates(c.d).filter((t) => str(t.type).toLowerCase() === 'datasource');
  if (ds.length === 0) add(c, rule, 'does not have a templated data source');
  for (const t of ds) {
    const query = templateQuery(t);
    const uids = [`${query.toLowerCase()}_datasource`, ...(ds.length === 1 ? ['datasource'] : [])];
    const names = [`${titleCase(query)} data source`, ...(ds.length === 1 ? ['Data source'] : [])];
    if (!uids.includes(str(t.name))) add(c, rule, `templated data source variable named '${str(t.name)}', should be named '${uids.join("', or '")}'`);
    if (!names.includes(str(t.label))) add(c, rule, `templated data source variable labeled '${str(t.label)}', should be labeled '${names.join("', or '")}'`, {}, 'warning');
  }
}

/** rule_template_job.go checkTemplate, for `job` and `instance`. */
function templateVariableRule(c: Ctx, name: 'job' | 'instance'): void {
  const rule = `template-${name}-rule`;
  if (!isPrometheus(c.d)) return;
  const t = templates(c.d).find((x) => x.name === name);
  if (!t) return add(c, rule, `is missing the ${name} template`);
  const uid = datasourceUid(t.datasource);
  if (uid === undefined) add(c, rule, `${name} template has invalid datasource`);
  if (!['$datasource', '${datasource}', '$prometheus_datasource', '${prometheus_datasource}'].includes(uid ?? '')) {
    add(c, rule, `${name} template should use datasource '$datasource', is currently '${uid ?? ''}'`);
  }
  if (t.type !== 'query') add(c, rule, `${name} template should be a Prometheus query, is currently '${str(t.type)}'`);
  if (t.label !== titleCase(name)) add(c, rule, `${name} template should be a labeled '${titleCase(name)}', is currently '${str(t.label)}'`, {}, 'warning');
  if (t.multi !== true) add(c, rule, `${name} template should be a multi select`);
  if (t.allValue !== '.+') add(c, rule, `${name} template allValue should be '.+', is currently '${str(t.allValue)}'`);
}

/**
 * rule_template_label_promql.go: a query variable is label_names, label_values, metrics or
 * query_result of valid PromQL. Stricter than upstream, which accepts what the parser partly read:
 * here the selector of label_values(selector, label) must parse whole.
 */
function templateLabelPromqlRule(c: Ctx): void {
  if (!isPrometheus(c.d)) return;
  for (const t of templates(c.d).filter((x) => x.type === 'query')) {
    const query = templateQuery(t);
    const fn = /([a-z_]+)\((.+)\)/s.exec(query);
    let problem: string | undefined;
    if (!fn) problem = `invalid 'query': ${query}`;
    else if (!TEMPLATE_FUNCTIONS.includes(fn[1] ?? '')) problem = `invalid 'function': ${fn[1] ?? ''}`;
    else {
      const { expr, problem: p } = variableQuery(query);
      problem = p ?? (expr !== undefined ? analyse(expr, GRAFANA_VALUES).errors[0] : undefined);
    }
    if (problem) add(c, 'template-label-promql-rule', `template '${str(t.name)}' invalid templated label '${query}': ${problem}`);
  }
}

function templateOnTimeChangeReloadRule(c: Ctx): void {
  for (const t of templates(c.d).filter((x) => x.type === 'query')) {
    if (t.refresh !== 2) {
      add(c, 'template-on-time-change-reload-rule', `templated datasource variable named '${str(t.name)}', should be set to be refreshed 'On Time Range Change (value 2)', is currently '${String(t.refresh ?? 0)}'`);
    }
  }
}

function panelRules(c: Ctx, p: Obj): void {
  const type = str(p.type);
  if (DATASOURCE_PANELS.includes(type)) {
    const names = templates(c.d).filter((t) => str(t.type).toLowerCase() === 'datasource').flatMap((t) => [`$${str(t.name)}`, `\${${str(t.name)}}`]);
    const uid = datasourceUid(p.datasource);
    if (uid === undefined) add(c, 'panel-datasource-rule', "has invalid datasource'", { panel: p });
    if (!names.includes(uid ?? '')) add(c, 'panel-datasource-rule', `does not use a templated datasource, uses '${uid ?? ''}'`, { panel: p });
  }
  if (!QUERY_PANELS.includes(type)) return;
  if (str(p.title) === '' || str(p.description) === '') {
    add(c, 'panel-title-description-rule', `has missing title or description, currently has title '${str(p.title)}' and description: '${str(p.description)}'`, { panel: p });
  }
  unitsRule(c, p);
  if (p.targets === undefined || p.targets === null) add(c, 'panel-no-targets-rule', 'has no targets', { panel: p });
}

/**
 * rule_panel_units.go: a unit from the list, from the last override that sets one, else the
 * defaults. Not asked of a stat panel that shows non-numeric fields (reduceOptions.fields set) nor
 * of a panel with value mappings (in the defaults or an override): those show words, not quantities.
 */
function unitsRule(c: Ctx, p: Obj): void {
  const fc = isObj(p.fieldConfig) ? p.fieldConfig : {};
  const defaults = isObj(fc.defaults) ? fc.defaults : {};
  const props = list(fc.overrides).filter(isObj).flatMap((o) => list(o.properties).filter(isObj));
  if (p.type === 'stat' && isObj(p.options) && isObj(p.options.reduceOptions) && str(p.options.reduceOptions.fields) !== '') return;
  if (props.some((o) => o.id === 'mappings' && o.value != null) || defaults.mappings != null) return;
  const fromOverrides = props.filter((o) => o.id === 'unit').map((o) => str(o.value)).at(-1) ?? '';
  const unit = fromOverrides !== '' ? fromOverrides : str(defaults.unit);
  if (unit === '' || !VALID_UNITS.has(unit)) add(c, 'panel-units-rule', `has no or invalid units defined: '${unit}'`, { panel: p });
}

const RATE_INTERVAL = /^\[\s*(\$__rate_interval|\$\{__rate_interval\})\s*\]$/;

function targetRules(c: Ctx, p: Obj): void {
  list(p.targets).forEach((raw, idx) => {
    if (!isObj(raw)) return;
    const at = { panel: p, targetIdx: idx };
    const expr = str(raw.expr);
    const ds = isObj(raw.datasource) ? str(raw.datasource.type) : '';
    const loki = templateQuery(datasourceTemplate(c.d) ?? {}) === 'loki' || ds === 'loki';
    if (loki && raw.hide !== true && PROMQL_PANELS.includes(str(p.type))) {
      // target-logql-rule, target-logql-auto-rule: this port has no LogQL parser, so a Loki query is
      // a finding until one is added (the shipped dashboards have none).
      add(c, 'target-logql-rule', `uses LogQL, which this port cannot check: '${expr}'`, at);
      return;
    }
    const result = analyse(expr, GRAFANA_VALUES);
    const parses = result.errors.length === 0;
    if (isPrometheus(c.d) && PROMQL_PANELS.includes(str(p.type))) {
      if (!parses) add(c, 'target-promql-rule', `invalid PromQL query '${expr}': ${result.errors.join('; ')}`, at);
      // rule_target_rate_interval.go: a range must be $__rate_interval where it is the argument of
      // rate() or irate(), and must not be any other fixed range outside a function call.
      const wrong = result.ranges.find((r) => !RATE_INTERVAL.test(r.range) && (r.fn === undefined || r.fn === 'rate' || r.fn === 'irate'));
      if (parses && wrong) {
        add(c, 'target-rate-interval-rule', wrong.fn ? `invalid PromQL query '${expr}': should use $__rate_interval` : `invalid PromQL query '${expr}': $__rate_interval used in non-rate function`, at);
      }
    }
    if (isPrometheus(c.d) && parses) {
      for (const label of ['job', 'instance'] as const) {
        for (const s of result.selectors) {
          const mt = s.matchers.filter((m) => m.label === label);
          const ok = mt.some((m) => m.op === '=~' && m.rawValue === `$${label}`);
          if (!ok) {
            const why = mt.length === 0 ? `${label} selector not found` : `${label} selector is ${mt.map((m) => `${m.op}"${m.rawValue}"`).join(', ')}, not =~"$${label}"`;
            add(c, `target-${label}-rule`, `invalid PromQL query '${expr}': ${why}`, at);
          }
        }
      }
    }
    // rule_target_counter_agg.go compares the printed selector, so upstream only catches a counter
    // without matchers; this port checks the metric name: a *_total series must be the range of
    // rate(), irate() or increase().
    for (const s of parses ? result.selectors : []) {
      if (s.metric?.endsWith('_total') && !['rate', 'irate', 'increase'].includes(s.rangeOf ?? '')) {
        add(c, 'target-counter-agg-rule', `counter metric '${s.text}' is not aggregated with rate, irate, or increase`, at);
      }
    }
  });
}

function uneditableRule(c: Ctx): void {
  if (c.d.editable === true) add(c, 'uneditable-dashboard', "is editable, it should be set to 'editable: false'");
}

/** The rule names of lint/rules.go NewRuleSet, in its order. */
export const DASHBOARD_LINTER_RULES = [
  'template-datasource-rule',
  'template-job-rule',
  'template-instance-rule',
  'template-label-promql-rule',
  'template-on-time-change-reload-rule',
  'panel-datasource-rule',
  'panel-title-description-rule',
  'panel-units-rule',
  'panel-no-targets-rule',
  'target-logql-rule',
  'target-logql-auto-rule',
  'target-promql-rule',
  'target-rate-interval-rule',
  'target-job-rule',
  'target-instance-rule',
  'target-counter-agg-rule',
  'uneditable-dashboard',
] as const;

/** Every finding of the rule set for one dashboard (before any .lint exclusion). */
export function lintDashboard(dashboard: Obj): DashboardFinding[] {
  const c: Ctx = { d: dashboard, out: [], title: str(dashboard.title) };
  templateDatasourceRule(c);
  templateVariableRule(c, 'job');
  templateVariableRule(c, 'instance');
  templateLabelPromqlRule(c);
  templateOnTimeChangeReloadRule(c);
  for (const p of panelsOf(dashboard)) panelRules(c, p);
  for (const p of panelsOf(dashboard)) targetRules(c, p);
  uneditableRule(c);
  return c.out;
}
