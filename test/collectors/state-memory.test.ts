/** State sets stay flat under any churn of free-text statuses (issue 11 #8). */
import { describe, expect, it } from 'vitest';
import { collectConnectors } from '../../src/collectors/connectors.js';
import { FORGET_STATE_AFTER_SECONDS, MAX_EXTRA_STATES, StateMemory } from '../../src/collectors/state-memory.js';
import { context } from './helpers.js';

const KEY = { connector: 'c1', profile: 'p' };

describe('StateMemory', () => {
  it('keeps a 0-valued state for a state seen before, base states first', () => {
    const m = new StateMemory();
    expect(m.states('s', KEY, 'FAILED', 0, ['RUNNING'])).toEqual(['RUNNING', 'FAILED']);
    expect(m.states('s', KEY, 'DONE', 60, ['RUNNING'])).toEqual(['RUNNING', 'DONE', 'FAILED']);
    expect(m.states('s', KEY, undefined, 120, ['RUNNING'])).toEqual(['RUNNING', 'DONE', 'FAILED']);
  });

  it('forgets a state not seen for an hour, never the current one', () => {
    const m = new StateMemory();
    m.states('s', KEY, 'old', 0);
    expect(m.states('s', KEY, 'new', FORGET_STATE_AFTER_SECONDS)).toEqual(['new', 'old']);
    expect(m.states('s', KEY, 'new', FORGET_STATE_AFTER_SECONDS + 1)).toEqual(['new']);
    // A state that stays current is never stale, however long ago it was first seen.
    expect(m.states('s', KEY, 'new', 10 * FORGET_STATE_AFTER_SECONDS)).toEqual(['new']);
  });

  it('bounds the states of one entity: a status that changes every poll keeps the series flat', () => {
    const m = new StateMemory();
    let counts: number[] = [];
    for (let poll = 0; poll < 1000; poll++) counts.push(m.states('s', KEY, `text ${poll}`, poll * 60, ['RUNNING']).length);
    counts = [...new Set(counts.slice(MAX_EXTRA_STATES))];
    expect(counts).toEqual([1 + MAX_EXTRA_STATES]);
    // The current state and the most recent ones are kept.
    const last = m.states('s', KEY, 'text 999', 999 * 60, ['RUNNING']);
    expect(last).toContain('text 999');
    expect(last).toContain('text 992');
    expect(last).not.toContain('text 991');
  });

  it('forgets an entity that vanished', () => {
    const m = new StateMemory();
    m.states('s', KEY, 'a', 0);
    m.retain('s', []);
    expect(m.states('s', KEY, 'b', 1)).toEqual(['b']);
  });
});

describe('a connector whose status text changes every poll', () => {
  it('exports a bounded number of series however many polls see a new text', () => {
    const ctx = context();
    const series: number[] = [];
    for (let poll = 0; poll < 200; poll++) {
      const run = { bridge_name: 'c1', profile: 'p', _time: 1_700_000_000 + poll, status: `Error: job ${poll} failed` };
      const samples = collectConnectors([run], { ...ctx, now: ctx.now + poll * 60 });
      series.push(samples.length);
    }
    expect(Math.max(...series.slice(20))).toBe(Math.min(...series.slice(20)));
    expect(Math.max(...series)).toBeLessThanOrEqual(series[0]! + MAX_EXTRA_STATES - 1);
  });
});

describe('across a restart (--storage.path)', () => {
  it('remembers the states an earlier process saw, with their times', () => {
    const a = new StateMemory();
    a.states('s', KEY, 'queued', 100);
    a.states('s', KEY, 'running', 200);
    const b = new StateMemory();
    expect(b.restoreState(JSON.parse(JSON.stringify(a.exportState())))).toBe(true);
    expect(b.states('s', KEY, 'success', 300)).toEqual(['queued', 'running', 'success']);
    // Forgotten as they would have been: an hour after they were last seen.
    expect(b.states('s', KEY, 'success', 100 + FORGET_STATE_AFTER_SECONDS + 1)).toEqual(['running', 'success']);
  });

  it('takes nothing from a state that is not valid', () => {
    const m = new StateMemory();
    expect(m.restoreState({ v: 1, seen: [['s', [['k', [['a', 'soon']]]]]] })).toBe(false);
    expect(m.restoreState({ v: 2, seen: [] })).toBe(false);
    expect(m.states('s', KEY, 'b', 1)).toEqual(['b']);
  });
});
