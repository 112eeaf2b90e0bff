/**
 * The writer's bounds: a stack is written after a change of its series at most every MIN_GAP_SECONDS
 * and after changes of times only every STATUS_GAP_SECONDS, an endpoint's first series at the next
 * look, every stack that has polled once more at close (none once abandoned: the folder's lock is
 * another process's), and the file of a stack no longer configured is removed. The test makes the
 * looks its timer would make (check()), on its own clock.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StackConfig } from '../../src/config/types.js';
import { wholeSelfFamilies } from '../../src/exposition/self-families.js';
import { TEXT_FORMAT } from '../../src/exposition/text-format.js';
import { createInstruments, createStateInstruments } from '../../src/metrics/instruments.js';
import { STACKS_DIR, stateFileOf } from '../../src/persist/state-file.js';
import { MIN_GAP_SECONDS, STATUS_GAP_SECONDS, StateWriter } from '../../src/persist/writer.js';
import { captureLogger } from '../helpers/log.js';
import { testStack } from '../helpers/stack.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-writer-'));
  mkdirSync(join(dir, STACKS_DIR));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function setup(stacks: StackConfig[], files: string[] = []) {
  const clock = { t: 1000 };
  const marks = new Map<string, { data: number; status: number; appeared?: number }>();
  const writes: string[] = [];
  const registry = new Registry();
  const ins = createInstruments(registry, { defaultMetrics: false });
  const writer = new StateWriter({
    dir,
    logger: captureLogger().logger,
    instruments: createStateInstruments(ins, () => [{ stack: 'a', endpoint: 'license', ageSeconds: 12.5 }]),
    now: () => clock.t,
    files,
    source: {
      stacks: () => stacks,
      marks: (s) => marks.get(s),
      settled: async () => undefined,
      parts: (s) => (writes.push(s), { n: writes.length }),
    },
  });
  return { writer, clock, marks, writes, registry, ins };
}


describe('StateWriter', () => {
  it("counts in the stack's own registry (its /metrics?stack= target) and on the whole /metrics alike", async () => {
    const { writer, marks, ins } = setup([testStack({ name: 'a' })]);
    try {
      marks.set('a', { data: 1, status: 1 });
      await writer.check();
      const own = (await ins.registries.stack('a')?.metrics()) ?? '';
      const whole = TEXT_FORMAT.write(await wholeSelfFamilies(ins.registries));
      for (const text of [own, whole]) {
        expect(text).toContain('cmdb_exporter_state_writes_total{stack="a",result="success"} 1');
        expect(text).toMatch(/cmdb_exporter_state_bytes\{stack="a"\} [1-9]/);
        expect(text).toContain('cmdb_endpoint_restored_age_seconds{stack="a",endpoint="license"} 12.5');
      }
      // Nothing of --storage.path in the exporter's own registry (no stack label there).
      expect(await ins.registries.exporter.metrics()).not.toContain('cmdb_exporter_state');
    } finally {
      await writer.close();
    }
  });

  it('writes a change of series at once, the next one after the least gap, a change of times only after the longer one', async () => {
    const { writer, clock, marks, writes } = setup([testStack({ name: 'a' })]);
    try {
      await writer.check();
      expect(writes).toEqual([]);
      marks.set('a', { data: 1, status: 1 });
      await writer.check();
      expect(writes).toEqual(['a']);
      expect(existsSync(stateFileOf(dir, 'a'))).toBe(true);
      marks.set('a', { data: 2, status: 2 });
      clock.t += MIN_GAP_SECONDS - 1;
      await writer.check();
      expect(writes).toEqual(['a']);
      clock.t += 1;
      await writer.check();
      expect(writes).toEqual(['a', 'a']);
      marks.set('a', { data: 2, status: 3 });
      clock.t += STATUS_GAP_SECONDS - 1;
      await writer.check();
      expect(writes).toHaveLength(2);
      clock.t += 1;
      await writer.check();
      expect(writes).toHaveLength(3);
    } finally {
      await writer.close();
    }
  });

  it('writes every stack that has polled at close, and removes the file of a stack no longer configured', async () => {
    writeFileSync(stateFileOf(dir, 'gone'), 'x');
    const { writer, marks, writes } = setup([testStack({ name: 'a' }), testStack({ name: 'b' }), testStack({ name: 'never' })], ['gone']);
    marks.set('a', { data: 1, status: 1 });
    marks.set('b', { data: 1, status: 1 });
    await writer.check();
    expect(existsSync(stateFileOf(dir, 'gone'))).toBe(false);
    expect(writes.sort()).toEqual(['a', 'b']);
    await writer.close();
    expect(writes.sort()).toEqual(['a', 'a', 'b', 'b']);
  });

  it("writes what appeared (an endpoint's first series) at the next look, not after the least gap; a failed write is tried again after the gap", async () => {
    const { writer, clock, marks, writes } = setup([testStack({ name: 'a' })]);
    try {
      marks.set('a', { data: 1, status: 1, appeared: 1 });
      await writer.check();
      clock.t += 1;
      marks.set('a', { data: 2, status: 2, appeared: 2 });
      await writer.check();
      expect(writes).toEqual(['a', 'a']);
      // A change of series that appeared nowhere new waits for the gap.
      clock.t += 1;
      marks.set('a', { data: 3, status: 3, appeared: 2 });
      await writer.check();
      expect(writes).toHaveLength(2);
      // The folder gone: the write that appeared fails once, and is not tried at every look.
      rmSync(join(dir, STACKS_DIR), { recursive: true });
      writeFileSync(join(dir, STACKS_DIR), '');
      marks.set('a', { data: 4, status: 4, appeared: 4 });
      await writer.check();
      await writer.check();
      expect(writes).toHaveLength(3);
      clock.t += MIN_GAP_SECONDS;
      await writer.check();
      expect(writes).toHaveLength(4);
    } finally {
      rmSync(join(dir, STACKS_DIR), { force: true });
      mkdirSync(join(dir, STACKS_DIR));
      await writer.close();
    }
  });

  it('once abandoned writes nothing, at close neither', async () => {
    const { writer, marks, writes } = setup([testStack({ name: 'a' })]);
    marks.set('a', { data: 1, status: 1 });
    await writer.check();
    expect(writes).toEqual(['a']);
    rmSync(stateFileOf(dir, 'a'));
    writer.abandon();
    marks.set('a', { data: 2, status: 2 });
    await writer.check();
    expect(await writer.writeNow('a')).toBeUndefined();
    await writer.close();
    expect(writes).toEqual(['a']);
    expect(existsSync(stateFileOf(dir, 'a'))).toBe(false);
  });
});
