/** Problems found while loading, where they are (paths) and what may have been meant (did you mean). */
import { ConfigError, formatPath, type ConfigIssue } from '../errors.js';
import { closest } from '../api/closest.js';
import { SecretScrubber } from '../secrets.js';

export { closest, formatPath };

export type { PathSegment } from '../errors.js';

/** The value at `path` in a tree of mappings and lists; undefined where the path leaves the tree. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const seg of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[seg] : undefined;
  return v;
}

/**
 * Every problem found while loading, in the order found, without repeats (a bad `defaults` file is
 * seen once per stack). Secret values met along the way are registered so that no message can
 * carry one, even when a secret was put into a key whose value is quoted back.
 */
export class IssueList {
  private readonly issues: ConfigIssue[] = [];
  private readonly scrubber = new SecretScrubber();
  private readonly blocked = new Set<string>();

  /** Set for a view made by prefixed(): everything goes to the parent, each path prefixed. */
  constructor(private readonly parent?: { readonly list: IssueList; readonly prefix: string }) {}

  /**
   * A view that reports into this list with every path prefixed, e.g. `stacks.d/acme.yaml: `: a
   * stack file is validated like the main file, and each of its problems names the file.
   */
  prefixed(prefix: string): IssueList {
    return new IssueList({ list: this, prefix });
  }

  add(path: string, message: string): void {
    if (this.parent) return this.parent.list.add(`${this.parent.prefix}${path}`, message);
    if (this.blocked.has(path)) return;
    if (!this.issues.some((i) => i.path === path && i.message === message)) this.issues.push({ path, message });
  }

  /** Report nothing more at `path`: its value is already known to be wrong (e.g. an unset ${VAR}). */
  block(path: string): void {
    if (this.parent) return this.parent.list.block(`${this.parent.prefix}${path}`);
    this.blocked.add(path);
  }

  secret(value: unknown): void {
    if (this.parent) return this.parent.list.secret(value);
    if (typeof value === 'string') this.scrubber.add(value);
  }

  /** True when a problem was reported at `path` or below it (a check built on it would only add noise). */
  hasAt(path: string): boolean {
    if (this.parent) return this.parent.list.hasAt(`${this.parent.prefix}${path}`);
    return this.issues.some((i) => i.path === path || i.path.startsWith(`${path}.`) || i.path.startsWith(`${path}[`));
  }

  get count(): number {
    if (this.parent) return this.parent.list.count;
    return this.issues.length;
  }

  /** `hints`: reported with the problems when there are any (never alone). */
  throwIfAny(hints: readonly ConfigIssue[] = []): void {
    if (this.parent) return this.parent.list.throwIfAny(hints);
    if (this.issues.length === 0) return;
    throw new ConfigError(
      this.issues.map((i) => ({ path: i.path, message: this.scrubber.scrub(i.message) })),
      hints,
    );
  }
}

/** '; did you mean "baseUrl"?' or ''. */
export function didYouMean(word: string, known: readonly string[]): string {
  const match = closest(word, known);
  return match === undefined ? '' : `; did you mean "${match}"?`;
}
