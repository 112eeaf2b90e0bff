/**
 * Symbolic settings: how the one TypeScript source of the rules and dashboards also writes the
 * jsonnet mixin (scripts/gen-mixin.ts). The rule and dashboard builders run once more with settings
 * whose values are markers instead of values: a string setting is a jsonnet expression between
 * \u0001 and \u0002 (`$._config.cmdbExporterSelector`), a number setting a registered sentinel
 * number. The few helpers that compute with settings (joinMatchers, humanSeconds, percentOf,
 * percentBelow) turn markers into a marker of the same computation in jsonnet (lib.libsonnet);
 * scripts/jsonnet/printer.ts then writes every string holding markers as a jsonnet expression.
 * With real settings every helper returns what it always did.
 */

const OPEN = '\u0001';
const CLOSE = '\u0002';
// The markers are control characters on purpose: no generated text holds them otherwise.
// eslint-disable-next-line no-control-regex
const MARKER = /\u0001([^\u0001\u0002]*)\u0002/g;

/** A jsonnet expression inside a generated string. */
export function ref(expression: string): string {
  return `${OPEN}${expression}${CLOSE}`;
}

export function hasRef(text: string): boolean {
  return text.includes(OPEN);
}

/** Sentinel numbers stand for a numeric setting: 3141592653NN, NN the setting's index. */
const SENTINEL_BASE = 314159265300;
const SENTINEL = /3141592653\d\d/g;
const sentinels = new Map<number, string>();

/** A number that stands for the jsonnet expression `expression` (a numeric setting). */
export function sentinel(expression: string): number {
  for (const [n, e] of sentinels) if (e === expression) return n;
  if (sentinels.size >= 100) throw new Error('too many numeric settings for the sentinels');
  const n = SENTINEL_BASE + sentinels.size;
  sentinels.set(n, expression);
  return n;
}

/** The jsonnet expression a sentinel number stands for, or undefined for a plain number. */
export function symbolOf(n: number): string | undefined {
  return sentinels.get(n);
}

/** A number in text: the sentinel's expression formatted as the number would be. */
function numberInText(n: number): string {
  const symbol = symbolOf(n);
  if (symbol === undefined) throw new Error(`${n} looks like a sentinel but is none`);
  return ref(`lib.num(${symbol})`);
}

export type Segment = { readonly literal: string } | { readonly expression: string };

/** A generated string as literal text and jsonnet expressions, in order. */
export function segments(text: string): Segment[] {
  const withNumbers = text.replace(SENTINEL, (digits) => numberInText(Number(digits)));
  const out: Segment[] = [];
  let last = 0;
  for (const m of withNumbers.matchAll(MARKER)) {
    if (m.index > last) out.push({ literal: withNumbers.slice(last, m.index) });
    out.push({ expression: m[1] ?? '' });
    last = m.index + m[0].length;
  }
  if (last < withNumbers.length) out.push({ literal: withNumbers.slice(last) });
  if (out.some((s) => 'literal' in s && (s.literal.includes(OPEN) || s.literal.includes(CLOSE)))) throw new Error(`unbalanced marker in ${JSON.stringify(text)}`);
  return out;
}

/** A jsonnet string literal: single quotes unless the text has one and no double quote. */
export function jsonnetLiteral(text: string): string {
  const q = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escaped = [...text]
    .map((ch) => {
      if (ch === '\\' || ch === q) return `\\${ch}`;
      if (ch === '\n') return '\\n';
      if (ch === '\t') return '\\t';
      if (ch === '\r') return '\\r';
      const code = ch.codePointAt(0) ?? 0;
      return code < 0x20 ? `\\u${code.toString(16).padStart(4, '0')}` : ch;
    })
    .join('');
  return `${q}${escaped}${q}`;
}

/** A string as one jsonnet expression: a string literal, or literals and expressions joined by +. */
export function jsonnetString(text: string): string {
  const parts = segments(text).map((s) => ('literal' in s ? jsonnetLiteral(s.literal) : s.expression));
  if (parts.length === 0) return "''";
  return parts.length === 1 ? (parts[0] ?? "''") : parts.join(' + ');
}

/** `a, b` of the non-empty label matchers (jsonnet: lib.matchers when a setting is among them). */
export function joinMatchers(matchers: readonly string[]): string {
  const present = matchers.filter((m) => m !== '');
  // One matcher is written as it is (an empty setting then leaves the braces empty, as here).
  if (present.length <= 1 || !present.some(hasRef)) return present.join(', ');
  return ref(`lib.matchers([${present.map(jsonnetString).join(', ')}])`);
}

/** Seconds as the short form people use in runbooks: 2d, 26h, 30m, 90s. */
export function humanSeconds(seconds: number): string {
  const symbol = symbolOf(seconds);
  if (symbol !== undefined) return ref(`lib.humanSeconds(${symbol})`);
  const units: ReadonlyArray<[string, number]> = [['d', 86400], ['h', 3600], ['m', 60]];
  for (const [unit, size] of units) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/** A ratio as a percentage, to 15 significant digits (0.9 → 90). */
export function percentOf(ratio: number): string {
  const symbol = symbolOf(ratio);
  if (symbol !== undefined) return ref(`lib.num(${symbol} * 100)`);
  return String(Number((ratio * 100).toPrecision(15)));
}

/** How far below 1 a ratio is, as a whole percentage (0.8 → 20). */
export function percentBelow(ratio: number): string {
  const symbol = symbolOf(ratio);
  if (symbol !== undefined) return ref(`lib.num(std.floor((1 - ${symbol}) * 100 + 0.5))`);
  return String(Math.round((1 - ratio) * 100));
}
