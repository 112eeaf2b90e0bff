import { describe, expect, it } from 'vitest';
import type { ExporterConfig, StackConfig } from '../../src/config/types.js';
import { ConfigError } from '../../src/errors.js';
import { filterStacks, ordinalFromPodName, ownerOf, parseShardOptions } from '../../src/shard.js';
import { testStack } from '../helpers/stack.js';

const names = (n: number, prefix = 'stack') => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const configOf = (stacks: readonly string[]): ExporterConfig => ({
  listenAddress: ':9873',
  logLevel: 'info',
  logFormat: 'json',
  enableReload: false,
  stacks: stacks.map((name): StackConfig => testStack({ name })),
});

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`);
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('rendezvous assignment', () => {
  it('gives every stack exactly one owner among N shards', () => {
    const config = configOf(names(200));
    for (const total of [1, 2, 3, 7]) {
      const owned = Array.from({ length: total }, (_, shard) => filterStacks(config, { shard, total, source: 'flags' }).stacks.map((s) => s.name));
      expect(owned.flat().sort(), `${total} shards`).toEqual(names(200).sort());
      for (const name of names(200)) expect(owned.findIndex((o) => o.includes(name)), `${name} of ${total}`).toBe(ownerOf(name, total));
    }
  });

  it('spreads 1,200 stacks over 3 shards within 15 % of a third each', () => {
    const counts = [0, 0, 0];
    for (const name of names(1200)) counts[ownerOf(name, 3)]!++;
    for (const c of counts) expect(Math.abs(c - 400)).toBeLessThan(60);
  });

  it('going from 3 to 4 shards moves at most 40 % of the stacks (about 1/4), each to the new shard', () => {
    const all = names(2000, 'prod-eu');
    const moved = all.filter((n) => ownerOf(n, 3) !== ownerOf(n, 4));
    const share = moved.length / all.length;
    expect(share).toBeLessThanOrEqual(0.4);
    expect(share).toBeGreaterThan(0.2); // ~1/4: the new shard takes its fair share, no more
    expect(share).toBeLessThan(0.3);
    // Rendezvous hashing: a stack either stays or moves to the added shard, never between old ones.
    for (const n of moved) expect(ownerOf(n, 4)).toBe(3);
  });

  it('is stable: the same name always lands on the same shard', () => {
    expect(ownerOf('prod-eu', 5)).toBe(ownerOf('prod-eu', 5));
  });

  it('filterStacks keeps only this shard\'s stacks and leaves the rest of the config alone', () => {
    const config = configOf(names(30));
    const parts = [0, 1, 2].map((shard) => filterStacks(config, { shard, total: 3, source: 'flags' }));
    const union = parts.flatMap((p) => p.stacks.map((s) => s.name)).sort();
    expect(union).toEqual(config.stacks.map((s) => s.name).sort());
    expect(new Set(union).size).toBe(30);
    for (const p of parts) expect(p.listenAddress).toBe(':9873');
    expect(filterStacks(config, { shard: 0, total: 1, source: 'flags' })).toBe(config);
  });
});

describe('shard options', () => {
  it.each([
    [{ shard: '2', totalShards: '3' }, {}, { shard: 2, total: 3, source: 'flags' }],
    [{}, { EXPORTER_SHARD: '0', EXPORTER_TOTAL_SHARDS: '4' }, { shard: 0, total: 4, source: 'environment' }],
    [{ fromPodName: true, totalShards: '4' }, { POD_NAME: 'cmdb-exporter-3' }, { shard: 3, total: 4, source: 'pod name' }],
    [{ fromPodName: true, totalShards: '4' }, { HOSTNAME: 'cmdb-exporter-1' }, { shard: 1, total: 4, source: 'pod name' }],
    [{}, { EXPORTER_SHARD_FROM_POD_NAME: 'true', EXPORTER_TOTAL_SHARDS: '2', POD_NAME: 'x-1' }, { shard: 1, total: 2, source: 'pod name' }],
    // Each flag wins over its variable.
    [{ shard: '1', totalShards: '2' }, { EXPORTER_SHARD: '5', EXPORTER_TOTAL_SHARDS: '9' }, { shard: 1, total: 2, source: 'flags' }],
    // What the StatefulSet does: the ordinal by flag, the count from the environment.
    [{ fromPodName: true }, { EXPORTER_TOTAL_SHARDS: '3', POD_NAME: 'cmdb-exporter-2' }, { shard: 2, total: 3, source: 'pod name' }],
  ])('%j with env %j → %j', (input, env, expected) => {
    expect(parseShardOptions(input, env)).toEqual(expected);
  });

  it('is off when nothing asks for it', () => {
    expect(parseShardOptions({}, { HOSTNAME: 'cmdb-exporter-2', EXPORTER_SHARD_FROM_POD_NAME: 'false' })).toBeUndefined();
  });

  it.each([
    [{ shard: '1' }, {}, '--total-shards: (or EXPORTER_TOTAL_SHARDS) is required with --shard'],
    [{ totalShards: '3' }, {}, '--shard: (or EXPORTER_SHARD) is required with --total-shards'],
    [{ totalShards: '3' }, { EXPORTER_SHARD: '3' }, 'EXPORTER_SHARD: must be below --total-shards (3), got 3'],
    [{ shard: '3', totalShards: '3' }, {}, '--shard: must be below --total-shards (3), got 3'],
    [{ shard: '-1', totalShards: '3' }, {}, '--shard: must be a whole number, got "-1"'],
    [{ shard: '0', totalShards: '0' }, {}, '--total-shards: must be from 1 to 1000, got 0'],
    [{ shard: '0', totalShards: 'three' }, {}, '--total-shards: must be a whole number, got "three"'],
    [{ fromPodName: true, totalShards: '3' }, {}, '--shard-from-pod-name: needs the pod name in POD_NAME (or HOSTNAME)'],
    [{ fromPodName: true, totalShards: '3' }, { POD_NAME: 'cmdb-exporter' }, 'does not end in -<ordinal>'],
    [{ fromPodName: true, totalShards: '3' }, { POD_NAME: 'cmdb-exporter-5' }, '--shard-from-pod-name: must be below --total-shards (3), got the pod ordinal 5'],
    [{ fromPodName: true, shard: '1', totalShards: '3' }, {}, '--shard: set either --shard or --shard-from-pod-name, not both'],
    [{}, { EXPORTER_SHARD: '1' }, '--total-shards: (or EXPORTER_TOTAL_SHARDS) is required with EXPORTER_SHARD'],
    [{}, { EXPORTER_SHARD_FROM_POD_NAME: 'maybe' }, 'EXPORTER_SHARD_FROM_POD_NAME: must be true or false'],
  ])('%j with env %j is rejected naming the flag: %s', (input, env, message) => {
    expect(problems(() => parseShardOptions(input, env)).join('\n')).toContain(message);
  });

  it('reads the ordinal at the end of a StatefulSet pod name', () => {
    expect(ordinalFromPodName('cmdb-exporter-12')).toBe(12);
    expect(ordinalFromPodName('web-7f9c-abcde')).toBeUndefined();
  });
});
