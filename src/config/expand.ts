/**
 * `${VAR}` expansion in string values of the parsed YAML. Expanding after parsing means a variable's
 * value is always one string value: it can never add keys or break the YAML syntax.
 *
 *   ${NAME}            the variable's value; unset is an error
 *   ${NAME:-default}   the default when the variable is unset or empty (as in the shell)
 *   $${                a literal "${"
 */
import type { IssueList, PathSegment } from './issues.js';
import { formatPath } from './issues.js';

type Env = Readonly<Record<string, string | undefined>>;

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([^]*))?$/;

/** The expanded string, or a message saying why it cannot be expanded. */
export function expandString(value: string, env: Env): { value: string } | { problem: string } {
  let out = '';
  let i = 0;
  while (i < value.length) {
    const dollar = value.indexOf('$', i);
    if (dollar < 0) break;
    out += value.slice(i, dollar);
    if (value.startsWith('$${', dollar)) {
      out += '${';
      i = dollar + 3;
      continue;
    }
    if (!value.startsWith('${', dollar)) {
      out += '$';
      i = dollar + 1;
      continue;
    }
    const close = value.indexOf('}', dollar + 2);
    if (close < 0) return { problem: 'has an unterminated "${"; write "$${" for a literal "${"' };
    const inner = value.slice(dollar + 2, close);
    const m = REFERENCE.exec(inner);
    if (!m || (m[2] ?? '').includes('${')) {
      return { problem: `has an invalid reference "\${${inner}}"; write \${NAME} or \${NAME:-default}` };
    }
    const name = m[1] ?? '';
    const fallback = m[2];
    const set = env[name];
    if (fallback !== undefined) out += set === undefined || set === '' ? fallback : set;
    else if (set !== undefined) out += set;
    else return { problem: `environment variable ${name} is not set (write \${${name}:-default} to give a default)` };
    i = close + 1;
  }
  return { value: out + value.slice(i) };
}

/**
 * Expand every string value (not keys) of a parsed YAML tree. Keys whose value is null (`key:` with
 * nothing after it) are dropped, so they mean "not set".
 */
export function expandTree(node: unknown, env: Env, path: PathSegment[], issues: IssueList): unknown {
  if (typeof node === 'string') {
    const r = expandString(node, env);
    if ('value' in r) return r.value;
    // Keep the text so the key still counts as set; the expansion problem is the one to report.
    issues.add(formatPath(path), r.problem);
    issues.block(formatPath(path));
    return node;
  }
  if (Array.isArray(node)) return node.map((item, i) => expandTree(item, env, [...path, i], issues));
  if (node !== null && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (value !== null) out[key] = expandTree(value, env, [...path, key], issues);
    }
    return out;
  }
  return node;
}
