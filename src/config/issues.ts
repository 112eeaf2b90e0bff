import { ConfigError, type ConfigIssue } from '../errors.js';
import { SecretScrubber } from '../secrets.js';

export type PathSegment = string | number;

/** ['stacks', 1, 'baseUrl'] → 'stacks[1].baseUrl'; odd keys are quoted: 'defaults["a b"]'. */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
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

  add(path: string, message: string): void {
    if (this.blocked.has(path)) return;
    if (!this.issues.some((i) => i.path === path && i.message === message)) this.issues.push({ path, message });
  }

  addAll(issues: readonly ConfigIssue[]): void {
    for (const i of issues) this.add(i.path, i.message);
  }

  /** Report nothing more at `path`: its value is already known to be wrong (e.g. an unset ${VAR}). */
  block(path: string): void {
    this.blocked.add(path);
  }

  secret(value: unknown): void {
    if (typeof value === 'string') this.scrubber.add(value);
  }

  get count(): number {
    return this.issues.length;
  }

  throwIfAny(): void {
    if (this.issues.length === 0) return;
    throw new ConfigError(
      this.issues.map((i) => ({ path: i.path, message: this.scrubber.scrub(i.message) })),
    );
  }
}
