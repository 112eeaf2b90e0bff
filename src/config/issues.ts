/** Problems found while loading, where they are (paths) and what may have been meant (did you mean). */
import { ConfigError, formatPath, type ConfigIssue } from '../errors.js';
import { closest, didYouMean } from '../api/closest.js';
import { SecretScrubber } from '../secrets.js';

export { closest, didYouMean, formatPath };

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
  /** A view made by prefixed() shares its list's state and puts `prefix` in front of every path. */
  constructor(
    private readonly shared = { issues: [] as ConfigIssue[], scrubber: new SecretScrubber(), blocked: new Set<string>() },
    private readonly prefix = '',
  ) {}

  /**
   * A view that reports into this list with every path prefixed, e.g. `stacks.d/acme.yaml: `: a
   * stack file is validated like the main file, and each of its problems names the file.
   */
  prefixed(prefix: string): IssueList {
    return new IssueList(this.shared, `${this.prefix}${prefix}`);
  }

  add(path: string, message: string): void {
    const at = `${this.prefix}${path}`;
    const { issues, blocked } = this.shared;
    if (blocked.has(at)) return;
    if (!issues.some((i) => i.path === at && i.message === message)) issues.push({ path: at, message });
  }

  /** Report nothing more at `path`: its value is already known to be wrong (e.g. an unset ${VAR}). */
  block(path: string): void {
    this.shared.blocked.add(`${this.prefix}${path}`);
  }

  secret(value: unknown): void {
    if (typeof value === 'string') this.shared.scrubber.add(value);
  }

  /** True when a problem was reported at `path` or below it (a check built on it would only add noise). */
  hasAt(path: string): boolean {
    const at = `${this.prefix}${path}`;
    return this.shared.issues.some((i) => i.path === at || i.path.startsWith(`${at}.`) || i.path.startsWith(`${at}[`));
  }

  /** `hints`: reported with the problems when there are any (never alone). */
  throwIfAny(hints: readonly ConfigIssue[] = []): void {
    const { issues, scrubber } = this.shared;
    if (issues.length === 0) return;
    throw new ConfigError(
      issues.map((i) => ({ path: i.path, message: scrubber.scrub(i.message) })),
      hints,
    );
  }
}
