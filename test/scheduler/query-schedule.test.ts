/** When a saved query runs (src/scheduler/query-schedule.ts), as a table of cases. */
import { describe, expect, it } from 'vitest';
import { MAX_QUERY_AGE_SECONDS, metadataDue, whenToRun, type LastRun, type WhenInput } from '../../src/scheduler/query-schedule.js';

const NOW = 1_780_000_000;
const H = 3600;
const base: WhenInput = { now: NOW, rebuild: NOW - 10 * H, rebuildPending: false, last: undefined, minSeconds: H };
const last = (ago: number, rebuild: number | undefined, end: LastRun['end'] = 'ok'): LastRun => ({ at: NOW - ago, ...(rebuild === undefined ? {} : { rebuild }), end });

describe('whenToRun', () => {
  it.each<[string, Partial<WhenInput>, ReturnType<typeof whenToRun>]>([
    ['at start', {}, { due: true, reason: 'start' }],
    ['at start, once the connector history was read', { rebuildPending: true }, { due: false, reason: 'waiting' }],
    ['at start without any rebuild known (no merger rows, connector disabled)', { rebuild: undefined }, { due: true, reason: 'start' }],
    ['the same rebuild: nothing', { last: last(2 * H, NOW - 10 * H) }, { due: false, reason: 'current' }],
    ['a rebuild since the last run', { rebuild: NOW - 60, last: last(2 * H, NOW - 10 * H) }, { due: true, reason: 'rebuild' }],
    ['a rebuild within intervals.queries of the last run waits', { rebuild: NOW - 60, last: last(H / 2, NOW - 10 * H) }, { due: false, reason: 'spacing' }],
    ['a rebuild time first known after a run without one', { rebuild: NOW - 60, last: last(2 * H, undefined) }, { due: true, reason: 'rebuild' }],
    ['an older rebuild (a row read late) is none', { rebuild: NOW - 20 * H, last: last(2 * H, NOW - 10 * H) }, { due: false, reason: 'current' }],
    ['a day after the last run, rebuild or not', { last: last(MAX_QUERY_AGE_SECONDS, NOW - 10 * H) }, { due: true, reason: 'daily' }],
    ['after a transient failure: at the next poll', { last: last(60, NOW - 10 * H, 'retry') }, { due: true, reason: 'retry' }],
    ['after the CMDB refused the query (400): at the next rebuild', { last: last(60, NOW - 10 * H, 'final') }, { due: false, reason: 'current' }],
    ['after a refusal of the metadata check: at the next rebuild', { rebuild: NOW - 60, last: last(2 * H, NOW - 10 * H, 'refused') }, { due: true, reason: 'rebuild' }],
    ['minSeconds of 1m: a rebuild two minutes after the last run', { rebuild: NOW - 10, minSeconds: 60, last: last(120, NOW - 10 * H) }, { due: true, reason: 'rebuild' }],
  ])('%s', (_case, input, expected) => {
    expect(whenToRun({ ...base, ...input })).toEqual(expected);
  });
});

describe('metadataDue', () => {
  it.each<[string, Parameters<typeof metadataDue>, boolean]>([
    ['never read', [undefined, NOW - H, NOW], true],
    ['read since the rebuild', [{ at: NOW - 60, rebuild: NOW - H }, NOW - H, NOW], false],
    ['a rebuild since', [{ at: NOW - 60, rebuild: NOW - 2 * H }, NOW - H, NOW], true],
    ['a day old', [{ at: NOW - MAX_QUERY_AGE_SECONDS, rebuild: NOW - H }, NOW - H, NOW], true],
    ['no rebuild known', [{ at: NOW - 60 }, undefined, NOW], false],
  ])('%s', (_case, args, due) => expect(metadataDue(...args)).toBe(due));
});
