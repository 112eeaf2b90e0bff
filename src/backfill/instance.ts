/**
 * The `instance` label of backfilled series when --instance is not given (docs/backfill.md,
 * "Joining the live series"): a backfilled series joins the live one only when every label is the
 * same. The live target's in --prometheus.url, else the address the exporter's /sd hands out.
 */
import { parseListenAddress } from '../config/load.js';
import { listenBase } from '../config/scrape-base.js';
import type { PrometheusApi } from './prometheus-api.js';

export class InstanceError extends Error {}

/** The address /sd hands out without --web.external-url: the listen address's (throws ConfigError on a bad address). */
export function sdInstance(listenAddress: string): string {
  const { host, port } = parseListenAddress(listenAddress, 'listenAddress');
  return listenBase(host, port, false).address;
}

/**
 * Per stack, the instance label of the live target of `job` in Prometheus: a target labelled with
 * the stack (/sd) first, else one without a stack label; undefined when the job has no target there.
 * Throws InstanceError when several targets could be the stack's.
 */
export async function liveInstances(api: PrometheusApi, job: string, stacks: readonly string[]): Promise<Map<string, string> | undefined> {
  const targets = (await api.targets()).map((t) => t.labels).filter((t) => t.job === job && t.instance !== undefined);
  if (targets.length === 0) return undefined;
  const out = new Map<string, string>();
  for (const stack of stacks) {
    const own = targets.filter((t) => t.stack === stack);
    const shared = targets.filter((t) => t.stack === undefined || t.stack === '');
    const candidates = [...new Set((own.length > 0 ? own : shared).map((t) => t.instance as string))].sort();
    if (candidates.length === 1) out.set(stack, candidates[0] as string);
    else if (candidates.length > 1) {
      throw new InstanceError(`--instance: ${candidates.length} targets of job ${job} in ${api.url} could be stack ${stack}'s (${candidates.join(', ')}): give --instance (and --stack) for the one to fill`);
    }
  }
  return out.size > 0 ? out : undefined;
}
