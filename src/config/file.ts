/**
 * The YAML file: read and parsed (the loader expands `${VAR}`, env.ts), then its sections (top level,
 * `defaults`, and each stack) validated each on its own, so that a mistake in one stack does not hide
 * the problems of another.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { LineCounter, parseDocument } from 'yaml';
import { isMapping } from '../api/schemas.js';
import { errorCode } from '../errors.js';
import { describeValue, kindOf } from './checks.js';
import type { CredentialNaming } from './credentials.js';
import { formatPath, IssueList, type PathSegment } from './issues.js';
import { defaultsSchema, parseSection, type Settings, stackPartsSchema, stackSchema, type StackInput, type StackParts, topSchema } from './schema.js';
import type { StackSource } from './stack.js';

/** Whether an alias makes the tree contain itself (`a: &a [*a]`): no setting can mean that, and walking it never ends. */
function refersToItself(node: unknown, open = new Set<object>()): boolean {
  if (node === null || typeof node !== 'object') return false;
  if (open.has(node)) return true;
  open.add(node);
  const found = Object.values(node).some((v) => refersToItself(v, open));
  open.delete(node);
  return found;
}

/**
 * A YAML file holding a mapping at the top level (an empty file is an empty one), or undefined when
 * it cannot be used at all; problems are reported at the file name, `what` naming it when unreadable.
 */
export function readYamlMapping(file: string, what: string, issues: IssueList): Record<string, unknown> | undefined {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (err) {
    issues.add(file, `cannot read ${what}: ${errorCode(err) ?? (err instanceof Error ? err.message : String(err))}`);
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
  if (refersToItself(tree)) {
    issues.add(file, 'invalid YAML: an alias refers to a node that contains it (a cycle, e.g. `a: &a [*a]`)');
    return undefined;
  }
  if (typeof tree !== 'object' || Array.isArray(tree)) {
    issues.add(file, `must hold a mapping of settings (key: value) at the top level, got ${kindOf(tree)}`);
    return undefined;
  }
  return tree as Record<string, unknown>;
}

export interface FileConfig {
  readonly top: z.output<typeof topSchema> | undefined;
  /** Undefined when `defaults` is invalid (reported). */
  readonly defaults: Settings | undefined;
  /** Undefined when the file declares no stacks. */
  readonly stacks: readonly StackSource[] | undefined;
}

type FileKeys = { secretFile?: string | undefined; tokenFile?: string | undefined; tls?: Settings['tls'] };

/** Relative file names in the YAML file are relative to the file's own directory. */
function resolveFiles<T extends FileKeys>(values: T, baseDir: string): T {
  const abs = (p: string | undefined): string | undefined => (p === undefined ? undefined : resolve(baseDir, p));
  const out: T = { ...values };
  if ('secretFile' in values) out.secretFile = abs(values.secretFile);
  if ('tokenFile' in values) out.tokenFile = abs(values.tokenFile);
  if (values.tls !== undefined) {
    out.tls = { ...values.tls, caFile: abs(values.tls.caFile), certFile: abs(values.tls.certFile), keyFile: abs(values.tls.keyFile) };
  }
  return out;
}

/** One stack's declaration at `at` (['stacks', i]; [] for a stack file holding one stack). */
export function stackSource(raw: Record<string, unknown>, at: readonly PathSegment[], baseDir: string, issues: IssueList): StackSource {
  const base = formatPath(at);
  const input = parseSection(stackSchema, raw, at, issues);
  // Its problems are reported above; a second list keeps them from being reported twice.
  const partial = input === undefined ? parseSection(stackPartsSchema, raw, at, new IssueList()) : undefined;
  issues.secret(raw.secret);
  issues.secret(raw.token);
  const path = (k: string) => (base === '' ? k : `${base}.${k}`);
  const naming: CredentialNaming = { name: (k) => k, path, stack: base === '' ? '(top level)' : base };
  return {
    input: input === undefined ? undefined : resolveFiles<StackInput>(input, baseDir),
    partial: partial === undefined ? undefined : resolveFiles<StackParts>(partial, baseDir),
    has: (key) => raw[key] !== undefined,
    naming,
    ownOrigin: path,
    builtinOrigin: path,
  };
}

function checkUniqueNames(stacks: readonly unknown[], issues: IssueList): void {
  const seen = new Map<string, number>();
  stacks.forEach((raw, i) => {
    const name = (raw as { name?: unknown } | null)?.name;
    if (typeof name !== 'string') return;
    const first = seen.get(name);
    if (first === undefined) seen.set(name, i);
    else issues.add(formatPath(['stacks', i, 'name']), `duplicate stack name ${describeValue(name)}, also used by stacks[${first}]`);
  });
}

export function readStacks(raw: unknown, baseDir: string, issues: IssueList): StackSource[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) {
    issues.add('stacks', `must be a list of stacks, got ${describeValue(raw)}`);
    return [];
  }
  if (raw.length === 0) {
    issues.add('stacks', 'must list at least one stack (or remove the key to configure one stack through CMDB_BASE_URL)');
    return [];
  }
  checkUniqueNames(raw, issues);
  const sources: StackSource[] = [];
  raw.forEach((item: unknown, i) => {
    if (!isMapping(item)) {
      issues.add(formatPath(['stacks', i]), `must be a mapping with name, baseUrl and credentials, got ${kindOf(item)}`);
    } else {
      sources.push(stackSource(item, ['stacks', i], baseDir, issues));
    }
  });
  return sources;
}

/** Validate the parsed (and expanded) file. */
export function parseFileConfig(raw: Record<string, unknown>, file: string, issues: IssueList): FileConfig {
  const baseDir = dirname(resolve(file));
  // Top-level keys starting with `x-` hold YAML anchors (`x-common: &common …`): accepted and ignored.
  const top = parseSection(topSchema, Object.fromEntries(Object.entries(raw).filter(([k]) => !k.startsWith('x-'))), [], issues);
  const defaults = parseSection(defaultsSchema, raw.defaults ?? {}, ['defaults'], issues);
  return {
    top,
    defaults: defaults === undefined ? undefined : resolveFiles(defaults, baseDir),
    stacks: readStacks(raw.stacks, baseDir, issues),
  };
}
