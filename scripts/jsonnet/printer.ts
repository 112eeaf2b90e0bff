/**
 * Writes a JSON value as jsonnet, indented like JSON.stringify(value, null, 2): strings holding
 * markers of settings (scripts/jsonnet/symbolic.ts) become expressions, a sentinel number becomes
 * its setting, everything else is written as JSON (which is jsonnet).
 */
import { jsonnetString, symbolOf } from './symbolic.js';

const KEYWORDS = new Set([
  'assert', 'else', 'error', 'false', 'for', 'function', 'if', 'import', 'importstr', 'importbin',
  'in', 'local', 'null', 'self', 'super', 'tailstrict', 'then', 'true',
]);

/** An object key: bare when jsonnet allows it, else a quoted string. */
export function jsonnetKey(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) && !KEYWORDS.has(key) ? key : JSON.stringify(key);
}

/** `value` as jsonnet, its nested lines indented by `indent` plus two spaces per level. */
export function toJsonnet(value: unknown, indent = ''): string {
  if (typeof value === 'string') return jsonnetString(value);
  if (typeof value === 'number') return symbolOf(value) ?? JSON.stringify(value);
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => `${inner}${toJsonnet(v, inner)}`).join(',\n')},\n${indent}]`;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    return `{\n${entries.map(([k, v]) => `${inner}${jsonnetKey(k)}: ${toJsonnet(v, inner)}`).join(',\n')},\n${indent}}`;
  }
  throw new Error(`cannot write ${typeof value} as jsonnet`);
}
