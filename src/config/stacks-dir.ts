/**
 * `stacksDir`: a directory of YAML files, one or more stacks each (docs/configuration.md, "A stack
 * per file"), each validated like the main file's `stacks`, its problems named with the file in front.
 * Files ending in .yaml or .yml are read in name order; names starting with a dot (`.acme.yaml.tmp`) are skipped.
 */
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { errorCode } from '../errors.js';
import { type Env, expandTree } from './env.js';
import { readStacks, readYamlMapping, stackSource } from './file.js';
import type { IssueList } from './issues.js';
import type { StackSource } from './stack.js';

/** A stack read from a file, and where to name it in messages. */
export interface PlacedSource {
  readonly source: StackSource;
  /** The raw `name`, when it is a string. */
  readonly name: string | undefined;
  /** `stacks.d/acme.yaml: stacks[1]` or `stacks.d/acme.yaml`. */
  readonly where: string;
  readonly file: string;
  /** The path of its `name` key within the file: `stacks[1].name` or `name`. */
  readonly namePath: string;
  /** Where the stack's problems go (each path with the file's name in front). */
  readonly issues: IssueList;
}

const STACK_FILE = /^[^.].*\.ya?ml$/;

/** The stack files of `dir`, in name order; a problem reading the directory is reported at `key`. */
export function stackFiles(dir: string, key: string, issues: IssueList): string[] | undefined {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && STACK_FILE.test(e.name))
      .map((e) => join(dir, e.name))
      .sort();
  } catch (err) {
    issues.add(key, `cannot read the directory ${JSON.stringify(dir)}: ${errorCode(err) ?? (err instanceof Error ? err.message : String(err))}`);
    return undefined;
  }
}

/** Every stack of every file of `dir`; problems go to `issues`, each path starting with the file name. */
export function readStacksDir(dir: string, key: string, env: Env, issues: IssueList): PlacedSource[] {
  const out: PlacedSource[] = [];
  for (const file of stackFiles(dir, key, issues) ?? []) {
    const tree = readYamlMapping(file, 'the stack file', issues);
    if (tree === undefined) continue;
    const inFile = issues.prefixed(`${file}: `);
    const raw = expandTree(tree, env, [], inFile) as Record<string, unknown>;
    const baseDir = dirname(resolve(file));
    if (!('stacks' in raw)) {
      if (Object.keys(raw).length === 0) {
        issues.add(file, 'is empty: a stack file holds one stack (name, baseUrl, credentials) or `stacks:` with a list; delete the file to remove its stacks');
        continue;
      }
      out.push({ source: stackSource(raw, [], baseDir, inFile), name: typeof raw.name === 'string' ? raw.name : undefined, where: file, file, namePath: 'name', issues: inFile });
      continue;
    }
    for (const other of Object.keys(raw)) {
      if (other !== 'stacks' && !other.startsWith('x-')) {
        inFile.add(other, 'unknown key in a stack file with `stacks:`; such a file holds only `stacks` (and x- anchors); per-stack settings go on each stack, shared ones under `defaults` in the main file');
      }
    }
    if (Array.isArray(raw.stacks) && raw.stacks.length === 0) {
      inFile.add('stacks', 'must list at least one stack; delete the file to remove its stacks');
      continue;
    }
    const sources = readStacks(raw.stacks, baseDir, inFile) ?? [];
    const list = Array.isArray(raw.stacks) ? (raw.stacks as unknown[]) : [];
    // readStacks skips items that are not mappings: pair the sources with the items that are.
    const items = list.map((item, i) => ({ item, i })).filter(({ item }) => item !== null && typeof item === 'object' && !Array.isArray(item));
    sources.forEach((source, k) => {
      const { item, i } = items[k] as { item: Record<string, unknown>; i: number };
      out.push({ source, name: typeof item.name === 'string' ? item.name : undefined, where: `${file}: stacks[${i}]`, file, namePath: `stacks[${i}].name`, issues: inFile });
    });
  }
  return out;
}
