/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4), for tests: it throws on
 * anything Prometheus' own parser (or `promtool check metrics`) would refuse — a bad name, an escape
 * other than \\ \" \n, a value that is not a float, a duplicate series, TYPE after samples, a label
 * value that is not valid UTF-8 (a lone surrogate) — and returns the samples for assertions.
 */

export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface ParsedExposition {
  samples: ParsedSample[];
  types: Map<string, string>;
  help: Map<string, string>;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const FLOAT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

export class ExpositionError extends Error {}

/** No lone surrogate: the text encodes to UTF-8 without replacement (String#isWellFormed is ES2024). */
function wellFormed(text: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

function fail(lineNo: number, message: string): never {
  throw new ExpositionError(`line ${lineNo}: ${message}`);
}

function parseValue(text: string, lineNo: number): number {
  // Any case, as Prometheus reads it (Go's ParseFloat): prom-client writes a NaN as `Nan` (its
  // event-loop lag gauges are NaN when two scrapes come within one sampling interval).
  if (text.toLowerCase() === 'nan') return Number.NaN;
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (!FLOAT.test(text)) fail(lineNo, `not a float: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Reads `{a="x",b="y"}` from `line` at `start` (the `{`); returns the labels and the index after `}`. */
function parseLabels(line: string, start: number, lineNo: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  for (;;) {
    if (line[i] === '}') return { labels, end: i + 1 };
    const eq = line.indexOf('=', i);
    if (eq < 0) fail(lineNo, 'label without =');
    const name = line.slice(i, eq);
    if (!LABEL_NAME.test(name)) fail(lineNo, `bad label name ${JSON.stringify(name)}`);
    if (name in labels) fail(lineNo, `label ${name} twice`);
    if (line[eq + 1] !== '"') fail(lineNo, `label ${name}: value not quoted`);
    let value = '';
    let j = eq + 2;
    for (;;) {
      const c = line[j];
      if (c === undefined) fail(lineNo, `label ${name}: unterminated value`);
      if (c === '"') break;
      if (c === '\\') {
        const next = line[j + 1];
        if (next === '\\') value += '\\';
        else if (next === '"') value += '"';
        else if (next === 'n') value += '\n';
        else fail(lineNo, `label ${name}: bad escape \\${next ?? ''}`);
        j += 2;
        continue;
      }
      value += c;
      j++;
    }
    if (!wellFormed(value)) fail(lineNo, `label ${name}: value is not valid UTF-8 (lone surrogate)`);
    labels[name] = value;
    i = j + 1;
    if (line[i] === ',') i++;
    else if (line[i] !== '}') fail(lineNo, `expected , or } after label ${name}`);
  }
}

function familyOf(name: string, types: Map<string, string>): string {
  if (types.has(name)) return name;
  for (const suffix of SUFFIXES) {
    if (name.endsWith(suffix) && types.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
  }
  return name;
}

export function parseExposition(text: string): ParsedExposition {
  if (!wellFormed(text)) throw new ExpositionError('exposition is not valid UTF-8 (lone surrogate)');
  if (text.length > 0 && !text.endsWith('\n')) throw new ExpositionError('exposition does not end with a newline');
  const samples: ParsedSample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const seen = new Set<string>();
  const withSamples = new Set<string>();
  const lines = text.split('\n');
  lines.pop();
  lines.forEach((line, index) => {
    const lineNo = index + 1;
    if (line === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (!m) return; // a plain comment
      const [, kind, name, rest = ''] = m as unknown as [string, string, string, string | undefined];
      if (!METRIC_NAME.test(name)) fail(lineNo, `bad metric name ${JSON.stringify(name)}`);
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) fail(lineNo, `bad type ${JSON.stringify(rest)}`);
        if (types.has(name)) fail(lineNo, `second TYPE for ${name}`);
        if (withSamples.has(name)) fail(lineNo, `TYPE for ${name} after its samples`);
        types.set(name, rest);
      } else {
        if (help.has(name)) fail(lineNo, `second HELP for ${name}`);
        if (/\\(?![\\n])/.test(rest)) fail(lineNo, `bad escape in HELP of ${name}`);
        help.set(name, rest);
      }
      return;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) fail(lineNo, `not a sample: ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) fail(lineNo, `bad metric name ${JSON.stringify(name)}`);
    let labels: Record<string, string> = {};
    let rest = line.slice(nameEnd);
    if (line[nameEnd] === '{') {
      const parsed = parseLabels(line, nameEnd, lineNo);
      labels = parsed.labels;
      rest = line.slice(parsed.end);
    }
    const fields = rest.trim().split(/ +/);
    if (!rest.startsWith(' ') || fields.length < 1 || fields.length > 2) fail(lineNo, `bad value part ${JSON.stringify(rest)}`);
    const value = parseValue(fields[0] as string, lineNo);
    if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1])) fail(lineNo, `bad timestamp ${JSON.stringify(fields[1])}`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
    if (seen.has(key)) fail(lineNo, `duplicate series ${name}${JSON.stringify(labels)}`);
    seen.add(key);
    withSamples.add(familyOf(name, types));
    samples.push({ name, labels, value });
  });
  return { samples, types, help };
}

/** The value of the one sample of `name` whose labels include `labels`, or undefined. */
export function sampleValue(parsed: ParsedExposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const match = parsed.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return match?.value;
}

/** Sample lines with their labels sorted and the lines sorted, for comparing what two formats or writers say. */
export function canonicalSamples(lines: readonly string[]): string[] {
  return lines
    .map((line) => {
      const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`not a sample line: ${line}`);
      const labels = [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => l[0]).sort();
      return `${m[1]}{${labels.join(',')}} ${m[3]}`;
    })
    .sort();
}
