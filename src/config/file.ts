import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument } from 'yaml';
import { kindOf } from './checks.js';
import { expandTree } from './expand.js';
import type { IssueList } from './issues.js';

type Env = Readonly<Record<string, string | undefined>>;

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message : String(err);
}

/**
 * Read and parse the YAML file, then expand `${VAR}` in its string values. Problems are reported
 * against the file name; returns undefined when the file cannot be used at all.
 */
export function readConfigFile(file: string, env: Env, issues: IssueList): Record<string, unknown> | undefined {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (err) {
    issues.add(file, `cannot read the config file: ${errorCode(err)}`);
    return undefined;
  }
  const lineCounter = new LineCounter();
  // `merge`: YAML `<<: *anchor` merge keys work, as users of compose files expect.
  const doc = parseDocument(source, { prettyErrors: false, uniqueKeys: true, merge: true, lineCounter });
  const [first, ...more] = doc.errors;
  if (first !== undefined) {
    // Later errors are mostly consequences of the first; the first is the one to fix.
    const pos = lineCounter.linePos(first.pos[0]);
    const rest = more.length === 0 ? '' : ` (and ${more.length} more YAML error${more.length === 1 ? '' : 's'} after it)`;
    issues.add(file, `invalid YAML at line ${pos.line}, column ${pos.col}: ${first.message.split('\n')[0] ?? first.code}${rest}`);
    return undefined;
  }
  let tree: unknown;
  try {
    tree = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    issues.add(file, `invalid YAML: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
  if (tree === null || tree === undefined) return {};
  if (typeof tree !== 'object' || Array.isArray(tree)) {
    issues.add(file, `must hold a mapping of settings (key: value) at the top level, got ${kindOf(tree)}`);
    return undefined;
  }
  return expandTree(tree, env, [], issues) as Record<string, unknown>;
}
