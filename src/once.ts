/**
 * --once: one poll of every endpoint of every stack, the exposition printed on stdout, and a last
 * line on stderr after the log: how many endpoints answered, which failed, which saved queries were
 * not counted, and how long it took. `--once` is the smoke test of a deployment, so a saved query
 * that was refused (it does not fit the stack's field metadata) or failed fails it as an endpoint does.
 */
import { start, type StartOptions } from './app.js';
import type { Logger } from './logger.js';
import type { LandingStack } from './server/landing.js';

/**
 * Polls once, prints, and returns the exit code: 0 when every endpoint answered and every saved
 * query was counted, else 1. Nothing is kept: a state directory shared with a daemon is not touched.
 */
export async function runOnce(
  opts: Pick<StartOptions, 'config' | 'scrubber' | 'shard' | 'defaultMetrics'> & { readonly logger: Logger },
  io: { readonly stdout: NodeJS.WritableStream; readonly stderr: NodeJS.WritableStream },
): Promise<number> {
  const began = performance.now();
  const app = await start({ ...opts, config: { ...opts.config, storagePath: undefined }, serve: false, schedule: false });
  const endpointsOk = await app.pollOnce();
  io.stdout.write(await app.metricsText());
  const { stacks } = app.landing();
  const summary = onceSummary(stacks, (performance.now() - began) / 1000);
  const uncounted = uncountedQueries(stacks);
  const queriesOk = uncounted.refused.length === 0 && uncounted.failed.length === 0;
  await app.close(0);
  if (!endpointsOk) opts.logger.error('at least one endpoint failed; see the log lines above and cmdb_endpoint_up');
  if (!queriesOk) opts.logger.error('at least one saved query was refused or failed; see the log lines above and cmdb_query_last_run_success');
  // One line for people, after the log (stderr: stdout is the exposition).
  io.stderr.write(`${summary}\n`);
  return endpointsOk && queriesOk ? 0 : 1;
}

type OnceStack = Pick<LandingStack, 'name' | 'endpoints' | 'queries'>;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The saved queries that were not counted, as `stack/query`, by what became of them. */
function uncountedQueries(stacks: readonly OnceStack[]): { readonly refused: string[]; readonly failed: string[] } {
  const named = (state: string) => stacks.flatMap((s) => (s.queries ?? []).filter((q) => q.state === state).map((q) => `${s.name}/${q.name}`));
  return { refused: named('refused'), failed: named('failed') };
}

/** `, 1 of 2 saved queries counted (refused: prod/misspelt)`; empty without saved queries. */
function queriesPart(stacks: readonly OnceStack[]): string {
  const all = stacks.reduce((n, s) => n + (s.queries?.length ?? 0), 0);
  if (all === 0) return '';
  const counted = stacks.reduce((n, s) => n + (s.queries ?? []).filter((q) => q.state === 'ok').length, 0);
  const { refused, failed } = uncountedQueries(stacks);
  const which = [refused.length > 0 ? `refused: ${refused.join(', ')}` : '', failed.length > 0 ? `failed: ${failed.join(', ')}` : ''].filter((t) => t !== '');
  return `, ${counted} of ${all} saved ${all === 1 ? 'query' : 'queries'} counted${which.length === 0 ? '' : ` (${which.join('; ')})`}`;
}

/**
 * e.g. `--once: 10 of 11 endpoints ok, 1 failed (prod/license: 503), 1 stack, in 2.1s`; with saved
 * queries `--once: 11 of 11 endpoints ok, 0 failed, 1 of 2 saved queries counted (refused: prod/misspelt), 1 stack, in 2.1s`.
 */
function onceSummary(stacks: readonly OnceStack[], seconds: number): string {
  const all = stacks.flatMap((s) => s.endpoints.map((e) => ({ stack: s.name, ...e })));
  const failed = all.filter((e) => e.state !== 'ok');
  const which = failed.length === 0 ? '' : ` (${failed.map((e) => `${e.stack}/${e.endpoint}: ${e.outcome ?? e.state}`).join(', ')})`;
  return `--once: ${all.length - failed.length} of ${plural(all.length, 'endpoint')} ok, ${failed.length} failed${which}${queriesPart(stacks)}, ${plural(stacks.length, 'stack')}, in ${seconds.toFixed(1)}s`;
}
