/** The last line of `--once`: how many endpoints answered, which failed, and how long it took. */
import type { LandingStack } from './server/landing.js';

/** e.g. `--once: 10 of 11 endpoints ok, 1 failed (prod/license: 503), 1 stack, in 2.1s`. */
export function onceSummary(stacks: readonly Pick<LandingStack, 'name' | 'endpoints'>[], seconds: number): string {
  const all = stacks.flatMap((s) => s.endpoints.map((e) => ({ stack: s.name, ...e })));
  const failed = all.filter((e) => e.state !== 'ok');
  const which = failed.length === 0 ? '' : ` (${failed.map((e) => `${e.stack}/${e.endpoint}: ${e.outcome ?? e.state}`).join(', ')})`;
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `--once: ${all.length - failed.length} of ${plural(all.length, 'endpoint')} ok, ${failed.length} failed${which}, ${plural(stacks.length, 'stack')}, in ${seconds.toFixed(1)}s`;
}
