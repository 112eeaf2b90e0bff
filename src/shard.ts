/**
 * Sharding across processes: the stacks of one configuration are split over N replicas, each polling
 * only its share (as kube-state-metrics' --shard / --total-shards, or a StatefulSet pod's ordinal),
 * by rendezvous hashing of the stack name (docs/scaling.md says why). Pure: options in, assignment
 * out. Problems are ConfigErrors naming the flag or variable (exit code 2).
 */
import { createHash } from 'node:crypto';
import type { Env } from './config/env.js';
import type { ExporterConfig } from './config/types.js';
import { ConfigError, type ConfigIssue } from './errors.js';

export interface ShardAssignment {
  /** This replica's shard, 0 ≤ shard < total. */
  readonly shard: number;
  readonly total: number;
  /** Where the shard number came from, for the start-up log. */
  readonly source: 'flags' | 'environment' | 'pod name';
}

/** The replica that is alone polls everything; also what an unsharded exporter reports. */
export const UNSHARDED: ShardAssignment = { shard: 0, total: 1, source: 'flags' };

/** Upper bound on --total-shards: far above any sensible replica count, low enough to catch typos. */
export const MAX_SHARDS = 1000;

export interface ShardInput {
  /** --shard */
  readonly shard?: string;
  /** --total-shards */
  readonly totalShards?: string;
  /** --shard-from-pod-name */
  readonly fromPodName?: boolean;
}

const set = (v: string | undefined): string | undefined => (v === undefined || v.trim() === '' ? undefined : v.trim());

function parseCount(value: string, name: string, min: number, max: number, issues: ConfigIssue[]): number | undefined {
  if (!/^\d+$/.test(value)) {
    issues.push({ path: name, message: `must be a whole number, got ${JSON.stringify(value)}` });
    return undefined;
  }
  const n = Number(value);
  if (n < min || n > max) {
    issues.push({ path: name, message: `must be from ${min} to ${max}, got ${n}` });
    return undefined;
  }
  return n;
}

/** `cmdb-exporter-3` → 3: the ordinal a StatefulSet appends to its pods' names. */
export function ordinalFromPodName(name: string): number | undefined {
  const m = /-(\d+)$/.exec(name.trim());
  return m ? Number(m[1]) : undefined;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

/**
 * The shard assignment from the command line and the environment, each value on its own: a flag wins
 * over its variable (--shard / EXPORTER_SHARD, --total-shards / EXPORTER_TOTAL_SHARDS,
 * --shard-from-pod-name / EXPORTER_SHARD_FROM_POD_NAME; the pod name from POD_NAME, else HOSTNAME),
 * so a StatefulSet can pass --shard-from-pod-name and the count in the environment. Undefined when
 * sharding is not asked for. Throws ConfigError naming the flag or variable that is wrong.
 */
export function parseShardOptions(input: ShardInput, env: Env): ShardAssignment | undefined {
  const issues: ConfigIssue[] = [];
  const shardName = input.shard !== undefined ? '--shard' : 'EXPORTER_SHARD';
  const totalName = input.totalShards !== undefined ? '--total-shards' : 'EXPORTER_TOTAL_SHARDS';
  const podName = input.fromPodName === true ? '--shard-from-pod-name' : 'EXPORTER_SHARD_FROM_POD_NAME';
  const shardText = input.shard ?? set(env.EXPORTER_SHARD);
  const totalText = input.totalShards ?? set(env.EXPORTER_TOTAL_SHARDS);
  let fromPod = input.fromPodName === true;
  if (!fromPod) {
    const flag = set(env.EXPORTER_SHARD_FROM_POD_NAME)?.toLowerCase();
    if (flag !== undefined && !TRUE.has(flag) && !FALSE.has(flag)) {
      issues.push({ path: podName, message: `must be true or false, got ${JSON.stringify(flag)}` });
    }
    fromPod = flag !== undefined && TRUE.has(flag);
  }
  if (shardText === undefined && totalText === undefined && !fromPod) {
    if (issues.length > 0) throw new ConfigError(issues);
    return undefined;
  }

  const total = totalText === undefined ? undefined : parseCount(totalText, totalName, 1, MAX_SHARDS, issues);
  if (totalText === undefined) {
    issues.push({ path: '--total-shards', message: `(or EXPORTER_TOTAL_SHARDS) is required with ${fromPod ? podName : shardName}: how many replicas share the stacks` });
  }
  let shard: number | undefined;
  if (fromPod && shardText !== undefined) {
    issues.push({ path: shardName, message: `set either ${shardName} or ${podName}, not both` });
  } else if (fromPod) {
    const pod = set(env.POD_NAME) ?? set(env.HOSTNAME);
    const ordinal = pod === undefined ? undefined : ordinalFromPodName(pod);
    if (pod === undefined) {
      issues.push({ path: podName, message: 'needs the pod name in POD_NAME (or HOSTNAME); neither is set' });
    } else if (ordinal === undefined) {
      issues.push({ path: podName, message: `the pod name ${JSON.stringify(pod)} does not end in -<ordinal> as a StatefulSet pod's does` });
    } else shard = ordinal;
  } else if (shardText === undefined) {
    issues.push({ path: '--shard', message: `(or EXPORTER_SHARD) is required with ${totalName}: this replica's number, from 0 to total − 1` });
  } else {
    shard = parseCount(shardText, shardName, 0, MAX_SHARDS - 1, issues);
  }
  if (shard !== undefined && total !== undefined && shard >= total) {
    const what = fromPod ? `the pod ordinal ${shard}` : String(shard);
    issues.push({ path: fromPod ? podName : shardName, message: `must be below ${totalName} (${total}), got ${what}` });
  }
  if (issues.length > 0 || shard === undefined || total === undefined) throw new ConfigError(issues);
  const source = fromPod ? 'pod name' : input.shard !== undefined ? 'flags' : 'environment';
  return { shard, total, source };
}

/** Rendezvous weight of a stack for one shard: the first 8 bytes of sha256(`${shard}:${stack}`). */
export function shardWeight(stack: string, shard: number): bigint {
  return createHash('sha256').update(`${shard}:${stack}`).digest().readBigUInt64BE(0);
}

/** The shard that polls `stack` among `total`: the highest weight wins, ties to the lower shard. */
export function ownerOf(stack: string, total: number): number {
  let best = 0;
  let bestWeight = -1n;
  for (let s = 0; s < total; s++) {
    const w = shardWeight(stack, s);
    if (w > bestWeight) {
      best = s;
      bestWeight = w;
    }
  }
  return best;
}

/** The configuration with only the stacks this shard polls. */
export function filterStacks(config: ExporterConfig, assignment: ShardAssignment): ExporterConfig {
  if (assignment.total <= 1) return config;
  return { ...config, stacks: config.stacks.filter((s) => ownerOf(s.name, assignment.total) === assignment.shard) };
}
