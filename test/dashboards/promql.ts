/**
 * PromQL analysis for the static checks of dashboards and rules: Grafana variable substitution
 * with a map back to the original text, parsing with @prometheus-io/lezer-promql, and the
 * selectors and rate-style ranges an expression uses.
 */
import { parser } from '@prometheus-io/lezer-promql';

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

/** Realistic values for the Grafana variables the dashboards may use. */
export const GRAFANA_VALUES: Readonly<Record<string, string>> = {
  job: 'cmdb-exporter',
  instance: 'cmdb-exporter:9873',
  stack: 'default',
  connector: 'servicenow',
  profile: 'prod',
  datasource: 'prometheus',
  __rate_interval: '1m',
  __interval: '30s',
  __interval_ms: '30000',
  __range: '6h',
  __range_s: '21600',
  __range_ms: '21600000',
};

// ${var}, ${var:format}, [[var]], [[var:format]], $var
const VARIABLE = /\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)(?::(\w+))?\]\]|\$(\w+)/g;

export interface Substituted {
  readonly text: string;
  readonly unknown: readonly string[];
  /** Original text of text[from, to). */
  raw(from: number, to: number): string;
}

export function substitute(raw: string, values: Readonly<Record<string, string>>): Substituted {
  let text = '';
  const starts: number[] = [];
  const ends: number[] = [];
  const unknown: string[] = [];
  let last = 0;
  const copy = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      text += raw[i];
      starts.push(i);
      ends.push(i + 1);
    }
  };
  for (const match of raw.matchAll(VARIABLE)) {
    const name = match[1] ?? match[3] ?? match[5] ?? '';
    const at = match.index;
    copy(last, at);
    last = at + match[0].length;
    const value = values[name];
    if (value === undefined) {
      unknown.push(name);
      copy(at, last);
      continue;
    }
    for (const ch of value) {
      text += ch;
      starts.push(at);
      ends.push(last);
    }
  }
  copy(last, raw.length);
  return {
    text,
    unknown,
    raw: (from, to) => (to <= from ? '' : raw.slice(starts[from] ?? raw.length, ends[to - 1] ?? raw.length)),
  };
}

export interface Matcher {
  readonly label: string;
  readonly op: string;
  /** The value as written before substitution, without quotes (e.g. `$job`). */
  readonly rawValue: string;
}

export interface Selector {
  readonly metric: string | undefined;
  readonly matchers: readonly Matcher[];
  /** Original text of the selector. */
  readonly text: string;
  /** The function whose direct argument this selector's range is (`rate` in rate(x[5m])), if any. */
  readonly rangeOf?: string;
}

/** A range selector (`x[5m]`, not a subquery) and the function it is the direct argument of. */
export interface RangeSelector {
  /** Original text of the range, e.g. `[$__rate_interval]`. */
  readonly range: string;
  /** Function name (`rate`, `avg_over_time`); undefined when the range is not a function's argument. */
  readonly fn?: string;
}

export interface RangeUse {
  readonly fn: string;
  /** Original text of the range, e.g. `[$__rate_interval]`; empty when the argument is no range. */
  readonly range: string;
}

export interface Analysis {
  readonly errors: readonly string[];
  readonly selectors: readonly Selector[];
  /** Every rate(), irate() and increase() call. */
  readonly rateCalls: readonly RangeUse[];
  /** Every range selector. */
  readonly ranges: readonly RangeSelector[];
}

const RATE_FUNCTIONS = new Set(['Rate', 'Irate', 'Increase']);

function unquote(literal: string): string {
  return literal.length >= 2 ? literal.slice(1, -1) : literal;
}

function matchersOf(node: SyntaxNode, s: Substituted): Matcher[] {
  const list = node.getChild('LabelMatchers');
  if (!list) return [];
  return list.getChildren('UnquotedLabelMatcher').map((mt) => {
    const name = mt.getChild('LabelName');
    const op = mt.getChild('MatchOp');
    const value = mt.getChild('StringLiteral');
    return {
      label: name ? s.text.slice(name.from, name.to) : '',
      op: op ? s.text.slice(op.from, op.to) : '',
      rawValue: value ? unquote(s.raw(value.from, value.to)) : '',
    };
  });
}

/** The name of the function `matrix` (a MatrixSelector) is a direct argument of. */
function functionOf(matrix: SyntaxNode, s: Substituted): string | undefined {
  const body = matrix.parent;
  const call = body?.name === 'FunctionCallBody' ? body.parent : null;
  const ident = call?.name === 'FunctionCall' ? call.getChild('FunctionIdentifier') : null;
  return ident ? s.text.slice(ident.from, ident.to) : undefined;
}

function selectorOf(node: SyntaxNode, s: Substituted): Selector {
  const id = node.getChild('Identifier');
  const matchers = matchersOf(node, s);
  const byName = matchers.find((mt) => mt.label === '__name__' && mt.op === '=');
  const rangeOf = node.parent?.name === 'MatrixSelector' ? functionOf(node.parent, s) : undefined;
  return {
    metric: id ? s.text.slice(id.from, id.to) : byName?.rawValue,
    matchers,
    text: s.raw(node.from, node.to),
    ...(rangeOf !== undefined ? { rangeOf } : {}),
  };
}

function rateCallOf(call: SyntaxNode, s: Substituted): RangeUse | undefined {
  const ident = call.getChild('FunctionIdentifier')?.firstChild;
  if (!ident || !RATE_FUNCTIONS.has(ident.type.name)) return undefined;
  const fn = ident.type.name.toLowerCase();
  const matrix = call.getChild('FunctionCallBody')?.getChild('MatrixSelector');
  const vector = matrix?.getChild('VectorSelector');
  if (!matrix || !vector) return { fn, range: '' };
  return { fn, range: s.raw(vector.to, matrix.to).trim() };
}

/** Parses `raw` after substituting `values`; positions in messages refer to the original text. */
export function analyse(raw: string, values: Readonly<Record<string, string>> = {}): Analysis {
  const s = substitute(raw, values);
  const errors: string[] = s.unknown.map((name) => `unknown variable $${name}`);
  const selectors: Selector[] = [];
  const rateCalls: RangeUse[] = [];
  const ranges: RangeSelector[] = [];
  if (s.text.trim() === '') errors.push('empty expression');
  parser.parse(s.text).iterate({
    enter(ref) {
      if (ref.type.isError) {
        const at = s.raw(0, ref.from).length;
        errors.push(`syntax error at offset ${at}: …${raw.slice(Math.max(0, at - 20), at + 20)}…`);
        return;
      }
      if (ref.name === 'VectorSelector') selectors.push(selectorOf(ref.node, s));
      if (ref.name === 'MatrixSelector') {
        const vector = ref.node.getChild('VectorSelector');
        const fn = functionOf(ref.node, s);
        ranges.push({ range: vector ? s.raw(vector.to, ref.to).trim() : '', ...(fn !== undefined ? { fn } : {}) });
      }
      if (ref.name === 'FunctionCall') {
        const use = rateCallOf(ref.node, s);
        if (use) rateCalls.push(use);
      }
    },
  });
  return { errors, selectors, rateCalls, ranges };
}

/** Does `rawValue` refer to the Grafana variable `name` in any of its syntaxes? */
export function refersTo(rawValue: string, name: string): boolean {
  return [...rawValue.matchAll(VARIABLE)].some((m) => (m[1] ?? m[3] ?? m[5]) === name);
}
