/** The checker itself: it must accept a correct dashboard and report each kind of mistake. */
import { beforeAll, describe, expect, it } from 'vitest';
import { DATASOURCE_REF, checkDashboard, checkDashboards } from './checker.js';
import { knownMetrics } from './metrics.js';
import type { MetricInfo } from './metrics.js';
import { GRAFANA_VALUES, analyse, substitute } from './promql.js';

type Obj = Record<string, unknown>;

const DS = { ...DATASOURCE_REF };
const GOOD_EXPR =
  'sum by (outcome) (rate(cmdb_endpoint_requests_total{job=~"$job", stack=~"$stack"}[$__rate_interval]))';

function variable(name: string, query: string): Obj {
  return { name, type: 'query', query, datasource: DS, multi: true, includeAll: true };
}

function panel(id: number, expr: string): Obj {
  return {
    id,
    type: 'timeseries',
    title: `panel ${id}`,
    description: 'Requests by outcome; anything but 200: read the exporter log.',
    gridPos: { h: 8, w: 12, x: 0, y: 0 },
    datasource: { ...DS },
    targets: [{ refId: 'A', datasource: { ...DS }, expr }],
  };
}

/** A small dashboard that follows every convention. */
function baseline(expr = GOOD_EXPR): Obj {
  return {
    uid: 'baseline',
    title: 'Baseline',
    templating: {
      list: [
        { name: 'datasource', type: 'datasource', query: 'prometheus' },
        variable('job', 'label_values(cmdb_exporter_build_info, job)'),
        variable('stack', 'label_values(cmdb_endpoint_up{job=~"$job"}, stack)'),
      ],
    },
    panels: [
      { id: 1, type: 'row', title: 'Row', description: 'Requests the exporter makes to the CMDB.', gridPos: { h: 1, w: 24, x: 0, y: 0 }, panels: [] },
      panel(2, expr),
    ],
  };
}

const target = (d: Obj) => ((d.panels as Obj[])[1]!.targets as Obj[])[0]!;
const vars = (d: Obj) => (d.templating as { list: Obj[] }).list;

let known: Map<string, MetricInfo>;
beforeAll(async () => {
  known = await knownMetrics();
});

describe('checker accepts correct queries', () => {
  it.each([
    ['a rate over $__rate_interval with job and stack', GOOD_EXPR],
    ['a process metric with the job matcher only', 'process_resident_memory_bytes{job=~"$job"}'],
    ['an event-loop metric with the job matcher only', 'nodejs_eventloop_lag_seconds{job=~"$job"}'],
    ['a histogram bucket', 'histogram_quantile(0.95, sum by (le) (rate(cmdb_endpoint_request_duration_seconds_bucket{job=~"$job", stack=~"$stack"}[$__rate_interval])))'],
    ['the ${var:regex} and [[var]] forms', 'cmdb_assets{job=~"${job:regex}", stack=~"[[stack]]"}'],
    ['${__rate_interval} in braces', 'increase(cmdb_poll_skipped_total{job=~"$job", stack=~"$stack"}[${__rate_interval}])'],
    ['a recording rule', 'stack:cmdb_endpoint_requests_per_rate_limit:ratio_rate5m{job=~"$job", stack=~"$stack"}'],
    ['Prometheus\' own up', 'up{job=~"$job"} == 0'],
  ])('%s', (_name, expr) => {
    expect(checkDashboard(baseline(expr), known)).toEqual([]);
  });
});

describe('checker reports each mistake (negative self-test)', () => {
  it.each<[string, (d: Obj) => void, string]>([
    ['a broken expression', (d) => { target(d).expr = GOOD_EXPR.slice(0, -1); }, 'syntax error'],
    ['a query missing its stack matcher', (d) => { target(d).expr = 'cmdb_assets{job=~"$job"}'; }, 'lacks stack=~"$stack"'],
    ['a query missing its job matcher', (d) => { target(d).expr = 'cmdb_assets{stack=~"$stack"}'; }, 'lacks job=~"$job"'],
    ['a hard-coded job instead of the variable', (d) => { target(d).expr = 'cmdb_assets{job="cmdb-exporter", stack=~"$stack"}'; }, 'lacks job=~"$job"'],
    ['a process metric without the job matcher', (d) => { target(d).expr = 'process_resident_memory_bytes'; }, 'lacks job=~"$job"'],
    ['a rate over a fixed range', (d) => { target(d).expr = GOOD_EXPR.replace('$__rate_interval', '5m'); }, 'must use [$__rate_interval]'],
    ['an increase over $__interval', (d) => { target(d).expr = 'increase(cmdb_poll_skipped_total{job=~"$job", stack=~"$stack"}[$__interval])'; }, 'must use [$__rate_interval]'],
    ['a metric the exporter does not serve', (d) => { target(d).expr = 'cmdb_asset{job=~"$job", stack=~"$stack"}'; }, 'unknown metric cmdb_asset'],
    ['a histogram without its _bucket suffix', (d) => { target(d).expr = 'cmdb_poll_duration_seconds{job=~"$job", stack=~"$stack"}'; }, 'unknown metric cmdb_poll_duration_seconds'],
    ['a label the metric does not have', (d) => { target(d).expr = 'cmdb_assets{job=~"$job", stack=~"$stack", connector="x"}'; }, 'cmdb_assets has no label connector'],
    ['an undefined variable', (d) => { target(d).expr = 'cmdb_assets{job=~"$jobs", stack=~"$stack"}'; }, 'unknown variable $jobs'],
    ['an empty query', (d) => { target(d).expr = ''; }, 'empty'],
    ['a hard-coded datasource uid on a panel', (d) => { (d.panels as Obj[])[1]!.datasource = { type: 'prometheus', uid: 'P1809F7CD0C75ACF3' }; }, 'datasource must be'],
    ['a hard-coded datasource uid on a target', (d) => { target(d).datasource = { type: 'prometheus', uid: 'abc' }; }, 'datasource must be'],
    ['a panel without a description', (d) => { delete (d.panels as Obj[])[1]!.description; }, 'needs a description'],
    ['a row without a description', (d) => { (d.panels as Obj[])[0]!.description = ''; }, 'needs a description'],
    ['two panels with one id', (d) => { (d.panels as Obj[])[1]!.id = 1; }, 'not unique'],
    ['a panel without queries', (d) => { (d.panels as Obj[])[1]!.targets = []; }, 'no queries'],
    ['no datasource variable', (d) => { vars(d).shift(); }, 'needs a variable "datasource"'],
    ['a stack variable without multi-select', (d) => { vars(d)[2]!.multi = false; }, 'multi-select query variable "stack"'],
    ['a stack variable not limited to the job', (d) => { vars(d)[2]!.query = 'label_values(cmdb_endpoint_up, stack)'; }, 'variable $stack: cmdb_endpoint_up lacks job'],
    ['a variable with label_values(label) only', (d) => { vars(d)[2]!.query = 'label_values(stack)'; }, 'without a metric selector'],
  ])('%s', (_name, mutate, expected) => {
    const d = baseline();
    mutate(d);
    const problems = checkDashboard(d, known);
    expect(problems.some((p) => p.includes(expected)), problems.join('\n')).toBe(true);
  });

  it('two dashboards with one uid', () => {
    const problems = checkDashboards(new Map([['a.json', baseline()], ['b.json', baseline()]]), known);
    expect(problems).toEqual(['b.json: uid baseline also used by a.json']);
  });
});

describe('Grafana variable substitution', () => {
  it.each([
    ['rate(x[$__rate_interval])', 'rate(x[1m])'],
    ['x{job=~"${job:regex}"}', 'x{job=~"cmdb-exporter"}'],
    ['x{stack=~"[[stack]]"}', 'x{stack=~"default"}'],
    ['x{a="${connector}", b=~"$profile"}', 'x{a="servicenow", b=~"prod"}'],
    ['x offset $__interval', 'x offset 30s'],
    ['sum_over_time(x[$__range])', 'sum_over_time(x[6h])'],
  ])('%s becomes %s', (raw, text) => {
    expect(substitute(raw, GRAFANA_VALUES).text).toBe(text);
  });

  it('maps positions back to the original text', () => {
    const s = substitute('x[$__rate_interval] > 1', GRAFANA_VALUES);
    expect(s.text).toBe('x[1m] > 1');
    expect(s.raw(1, 5)).toBe('[$__rate_interval]');
    expect(s.raw(6, 9)).toBe('> 1');
  });

  it('reports syntax errors at the offset of the original text', () => {
    const { errors } = analyse('rate(x[$__rate_interval]) +', GRAFANA_VALUES);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('offset 27');
  });
});
