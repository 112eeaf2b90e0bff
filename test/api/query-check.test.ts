/**
 * What a saved query must be before it is sent (src/api/query-check.ts, query-shape.ts,
 * query-dates.ts): every trap of the real service that answers a malformed query with a confident
 * 0 is refused here, with the query and the criterion named and what to write instead.
 */
import { describe, expect, it } from 'vitest';
import { prepareQuery } from '../../src/api/query-check.js';
import { absoluteRanges, datetimeProblem, relativeDays, resolveDatetime } from '../../src/api/query-dates.js';
import { parseSavedQueries } from '../../src/api/query-shape.js';
import type { Criterion, SavedQuery } from '../../src/api/query.js';

const FIELDS = new Map([
  ['Asset_Type', 'String'],
  ['sourcetype', 'List'],
  ['EP_Not_Installed', 'Binary'],
  ['High_CVE', 'Integer'],
  ['Risk_Score', 'Float'],
  ['Last_Discovered_Datetime', 'Datetime'],
  ['Odd_Field', 'Object'],
]);
// 2026-03-10T15:30:00Z
const NOW = Date.parse('2026-03-10T15:30:00Z') / 1000;

const query = (...criteria: Criterion[]): SavedQuery => ({ name: 'q1', table: 'asset', query: [[{ searchFieldName: 'Asset_Type', operator: '==', value: 'Server' }], criteria] });
const refusal = (...criteria: Criterion[]) => {
  const r = prepareQuery(query(...criteria), FIELDS, NOW, 'UTC');
  return r.ok ? undefined : r.reason;
};

describe('prepareQuery against the field metadata', () => {
  it.each<[string, Criterion, RegExp]>([
    ['a quoted number on an Integer field', { searchFieldName: 'High_CVE', operator: '>=', value: '5' }, /"5" is a quoted number: the service answers 0 for a quoted number on an Integer field; write 5 without quotes/],
    ['a quoted number on a Float field', { searchFieldName: 'Risk_Score', operator: '==', value: '80.5' }, /"80.5" is a quoted number.*a Float field/],
    ['an unknown field', { searchFieldName: 'asset_typ', operator: '==', value: 'x' }, /no field "asset_typ" in this stack's asset metadata.*did you mean "Asset_Type"\?/],
    ['a wrong type', { searchFieldName: 'EP_Not_Installed', operator: '==', type: 'String', value: 'True' }, /type "String" is not the field's: EP_Not_Installed is Binary.*write "Binary" or leave type out/],
    ['a windowed operator', { searchFieldName: 'Last_Discovered_Datetime', operator: 'within past', value: '30' }, /operator "within past" is refused.*write the absolute form: operator ">=" with a relative value such as "-30d"/],
    ['an ignored window', { searchFieldName: 'Last_Discovered_Datetime', operator: 'not within', value: '30' }, /operator "not within" is refused.*one OR group/],
    ['an operator the type does not take', { searchFieldName: 'EP_Not_Installed', operator: 'match', value: 'True' }, /operator "match" is not one the service takes for a Binary field \(it takes ==, !=, exists, empty\)/],
    ['a number on a String field', { searchFieldName: 'Asset_Type', operator: '==', value: 5 }, /5 is not text \(the field is String\)/],
    ['a fraction on an Integer field', { searchFieldName: 'High_CVE', operator: '>', value: 2.5 }, /2.5 is not a whole number/],
    ['a number in a List', { searchFieldName: 'sourcetype', operator: 'in', value: [22] }, /22 is not text: the values of a List field are text, compared exactly; write "22"/],
    ['a Binary word the service does not know', { searchFieldName: 'EP_Not_Installed', operator: '==', value: 'maybe' }, /"maybe" is not a Binary value/],
    ['a date without a time', { searchFieldName: 'Last_Discovered_Datetime', operator: '<', value: '2026-01-01' }, /has no time.*write "2026-01-01 00:00:00"/],
    ['a value for exists', { searchFieldName: 'Asset_Type', operator: 'exists', value: 'x' }, /"exists" takes value: null/],
    ['a field of a type that cannot be checked', { searchFieldName: 'Odd_Field', operator: '==', value: 'x' }, /dataType "Object" is not one whose values can be checked/],
  ])('refuses %s, naming the query and the criterion', (_what, criterion, reason) => {
    const text = refusal(criterion);
    expect(text).toMatch(reason);
    expect(text).toMatch(new RegExp(`^query "q1": criterion \\[1\\]\\[0\\] \\(${criterion.searchFieldName} ${criterion.operator}\\): `));
  });

  it('sends each criterion with exactly four keys: the field\'s type, and the value as the service reads it', () => {
    const r = prepareQuery(
      {
        name: 'q',
        table: 'asset',
        query: [
          [{ searchFieldName: 'EP_Not_Installed', operator: '==', value: true }],
          [{ searchFieldName: 'Last_Discovered_Datetime', operator: '<', value: '-30d' }, { searchFieldName: 'Last_Discovered_Datetime', operator: '>=', value: 'today' }],
          [{ searchFieldName: 'sourcetype', operator: 'exists', value: null }],
        ],
      },
      FIELDS,
      NOW,
      'UTC',
    );
    expect(r).toEqual({
      ok: true,
      query: [
        [{ searchFieldName: 'EP_Not_Installed', operator: '==', type: 'Binary', value: 'True' }],
        [
          { searchFieldName: 'Last_Discovered_Datetime', operator: '<', type: 'Datetime', value: '2026-02-08 00:00:00' },
          { searchFieldName: 'Last_Discovered_Datetime', operator: '>=', type: 'Datetime', value: '2026-03-10 00:00:00' },
        ],
        [{ searchFieldName: 'sourcetype', operator: 'exists', type: 'List', value: null }],
      ],
    });
  });
});

describe('a relative day with == or != (issue 37: "== today" counted 0 with last_run_success 1)', () => {
  it.each<[string, string, RegExp]>([
    ['==', 'today', /"today" with "==" is refused: a relative day stands for 00:00:00 of today.*two AND groups: \[\[\{operator ">=", value "today"\}\], \[\{operator "<", value "\+1d"\}\]\]/],
    ['==', '-1d', /00:00:00 of the day 1 day before today.*value "-1d"\}\], \[\{operator "<", value "today"\}/],
    ['==', '-3d', /value "-3d"\}\], \[\{operator "<", value "-2d"\}/],
  ])('%s %s against the metadata: refused, naming the query and the range to write', (operator, value, reason) => {
    const text = refusal({ searchFieldName: 'Last_Discovered_Datetime', operator, value });
    expect(text).toMatch(/^query "q1": criterion \[1\]\[0\] \(Last_Discovered_Datetime ==\): /);
    expect(text).toMatch(reason);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['== today, no type', { searchFieldName: 'Last_Discovered_Datetime', operator: '==', value: 'today' }, /^query "seen-today": "today" with "==" is refused.*\(for a String field holding this text, write type: String\)$/],
    ['== today, type Datetime', { searchFieldName: 'Last_Discovered_Datetime', operator: '==', type: 'Datetime', value: 'today' }, /^query "seen-today": "today" with "==" is refused.*"\+1d"/],
    ['!= -30d, no type', { searchFieldName: 'Last_Discovered_Datetime', operator: '!=', value: '-30d' }, /"-30d" with "!=" is refused.*one OR group: \[\[\{operator "<", value "-30d"\}, \{operator ">=", value "-29d"\}\]\]/],
  ])('%s: refused at load (--check-config), at the value, naming the query', (_what, criterion, message) => {
    const r = parseSavedQueries([{ name: 'seen-today', table: 'asset', query: [[criterion]] }]);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.at).toEqual([0, 'query', 0, 0, 'value']);
    expect(r.message).toMatch(message);
  });

  it('a String field holding the text "today" may still be compared with ==', () => {
    expect(parseSavedQueries([{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'Note', operator: '==', type: 'String', value: 'today' }]] }])).toMatchObject({ ok: true });
  });

  it('>= and < with relative days are the range, as before', () => {
    expect(parseSavedQueries([{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: '>=', value: 'today' }], [{ searchFieldName: 'D', operator: '<', value: '+1d' }]] }])).toMatchObject({ ok: true });
  });
});

describe('an absolute Datetime with == or != (issue 45: "== 2026-11-01 00:00:00" counted 0 with last_run_success 1)', () => {
  it.each<[string, string, RegExp]>([
    [
      '==',
      '2026-11-01 00:00:00',
      /"2026-11-01 00:00:00" with "==" is refused: "==" compares with that one second exactly \(a count of 0 that looks true\); the whole day is two AND groups: \[\[\{operator ">=", value "2026-11-01 00:00:00"\}\], \[\{operator "<", value "2026-11-02 00:00:00"\}\]\]; that one second alone is two AND groups: \[\[\{operator ">=", value "2026-11-01 00:00:00"\}\], \[\{operator "<", value "2026-11-01 00:00:01"\}\]\]$/,
    ],
    ['==', '2026-12-31 13:45:00', /the whole day it falls in is two AND groups: \[\[\{operator ">=", value "2026-12-31 00:00:00"\}\], \[\{operator "<", value "2027-01-01 00:00:00"\}\]\]; that one second alone .*value "2026-12-31 13:45:01"/],
  ])('%s "%s" against the metadata: refused, naming the query and the ranges to write', (operator, value, reason) => {
    const text = refusal({ searchFieldName: 'Last_Discovered_Datetime', operator, value });
    expect(text).toMatch(new RegExp(`^query "q1": criterion \\[1\\]\\[0\\] \\(Last_Discovered_Datetime ${operator}\\): `));
    expect(text).toMatch(reason);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['no type', { searchFieldName: 'Last_Discovered_Datetime', operator: '==', value: '2026-11-01 00:00:00' }, /^query "nov-1": "2026-11-01 00:00:00" with "==" is refused.*"2026-11-02 00:00:00".*\(for a String field holding this text, write type: String\)$/],
    ['type Datetime', { searchFieldName: 'Last_Discovered_Datetime', operator: '==', type: 'Datetime', value: ' 2026-11-01 00:00:00 ' }, /^query "nov-1": " 2026-11-01 00:00:00 " with "==" is refused.*two AND groups.*"2026-11-02 00:00:00"\}\]\]; that one second alone/],
    // The service takes no != on a Datetime: with a type that is refused first; without one, the day is named.
    ['no type and !=', { searchFieldName: 'Last_Discovered_Datetime', operator: '!=', value: '2026-11-01 00:00:00' }, /"!=" compares with that one second exactly.*outside the whole day is one OR group: \[\[\{operator "<", value "2026-11-01 00:00:00"\}, \{operator ">=", value "2026-11-02 00:00:00"\}\]\]/],
  ])('with %s: refused at load (--check-config), at the value, naming the query', (_what, criterion, message) => {
    const r = parseSavedQueries([{ name: 'nov-1', table: 'asset', query: [[criterion]] }]);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.at).toEqual([0, 'query', 0, 0, 'value']);
    expect(r.message).toMatch(message);
  });

  it('the ranges it names are taken, and a String field holding such text may still be compared with ==', () => {
    const day = [[{ searchFieldName: 'D', operator: '>=', value: '2026-11-01 00:00:00' }], [{ searchFieldName: 'D', operator: '<', value: '2026-11-02 00:00:00' }]];
    expect(parseSavedQueries([{ name: 'q', table: 'asset', query: day }])).toMatchObject({ ok: true });
    expect(parseSavedQueries([{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'Note', operator: '==', type: 'String', value: '2026-11-01 00:00:00' }]] }])).toMatchObject({ ok: true });
  });

  it.each([
    ['2026-11-01 00:00:00', { day: '2026-11-01 00:00:00', nextDay: '2026-11-02 00:00:00', nextSecond: '2026-11-01 00:00:01' }],
    ['2026-12-31 23:59:59', { day: '2026-12-31 00:00:00', nextDay: '2027-01-01 00:00:00', nextSecond: '2027-01-01 00:00:00' }],
    ['2028-02-28 10:00:00', { day: '2028-02-28 00:00:00', nextDay: '2028-02-29 00:00:00', nextSecond: '2028-02-28 10:00:01' }],
    ['2026-11-01', undefined],
    ['today', undefined],
  ])('absoluteRanges(%s): its day, the next day, the next second (calendar arithmetic on the text, in no zone)', (value, ranges) => {
    expect(absoluteRanges(value)).toEqual(ranges);
  });
});

describe('Binary values are sent as the service spells them (it answers "true" with a silent 0)', () => {
  it.each<[unknown, 'True' | 'False']>([
    [true, 'True'],
    [false, 'False'],
    [1, 'True'],
    [0, 'False'],
    ['true', 'True'],
    [' Yes ', 'True'],
    ['TRUE', 'True'],
    ['True', 'True'],
    ['yes', 'True'],
    ['false', 'False'],
    ['No', 'False'],
    [' no', 'False'],
    ['False', 'False'],
  ])('%j is sent as %s', (value, sent) => {
    const r = prepareQuery({ name: 'q', table: 'asset', query: [[{ searchFieldName: 'EP_Not_Installed', operator: '==', value: value as never }]] }, FIELDS, NOW, 'UTC');
    expect(r).toEqual({ ok: true, query: [[{ searchFieldName: 'EP_Not_Installed', operator: '==', type: 'Binary', value: sent }]] });
  });
});

describe('relative days', () => {
  it.each([
    ['today', 0],
    ['TODAY', 0],
    ['-30d', -30],
    ['+90d', 90],
    ['-0d', 0],
  ])('%s is %i days from today', (text, days) => expect(relativeDays(text)).toBe(days));

  it.each(['-30', '30d', '-30days', '-1w', 'yesterday'])('%s is not a relative day', (text) => expect(relativeDays(text)).toBeUndefined());

  it('resolve to 00:00:00 of that day in the stack\'s time zone', () => {
    // 15:30Z on 10 March is already 11 March in Tokyo, still 10 March in New York.
    expect(resolveDatetime('-30d', NOW, 'UTC')).toBe('2026-02-08 00:00:00');
    expect(resolveDatetime('today', NOW, 'Asia/Tokyo')).toBe('2026-03-11 00:00:00');
    expect(resolveDatetime('+1d', NOW, 'America/New_York')).toBe('2026-03-11 00:00:00');
    expect(resolveDatetime('2026-01-01 08:00:00', NOW, 'UTC')).toBe('2026-01-01 08:00:00');
  });

  it('every run of one day sends the same value: the count does not move with the clock', () => {
    expect(resolveDatetime('-30d', NOW - 15 * 3600, 'UTC')).toBe(resolveDatetime('-30d', NOW + 8 * 3600, 'UTC'));
  });

  it.each([
    ['2026-02-30 00:00:00', /is not a real time/],
    ['2026-02-01T00:00:00Z', /is not a time: write "yyyy-mm-dd HH:MM:SS"/],
    ['-30 days', /is not a time/],
  ])('%s is not a Datetime value', (text, problem) => expect(datetimeProblem(text)).toMatch(problem));
});

describe('the configuration\'s check (without the CMDB)', () => {
  const one = (criterion: Record<string, unknown>, extra: Record<string, unknown> = {}) => parseSavedQueries([{ name: 'q', table: 'asset', query: [[criterion]], ...extra }]);

  it('accepts the API\'s own shape, type optional', () => {
    expect(one({ searchFieldName: 'Risk_Score', operator: '>=', value: 80 })).toMatchObject({ ok: true });
    expect(one({ searchFieldName: 'Asset_Type', operator: '==', type: 'String', value: 'Server' }, { help: 'servers' })).toMatchObject({ ok: true });
  });

  it.each<[string, unknown, ReadonlyArray<string | number>, RegExp]>([
    ['a windowed operator', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: 'within past', value: 30 }]] }], [0, 'query', 0, 0, 'operator'], /refused.*absolute form/],
    ['an unknown operator', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: '=', value: 1 }]] }], [0, 'query', 0, 0, 'operator'], /unknown operator "="; did you mean "=="\?/],
    ['a type in the wrong case', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: '==', type: 'binary', value: 'True' }]] }], [0, 'query', 0, 0, 'type'], /write "Binary"/],
    ['an operator the given type does not take', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: '>', type: 'String', value: 'a' }]] }], [0, 'query', 0, 0, 'operator'], /not one the service takes for a String field/],
    ['a quoted number with a comparison', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: '>=', value: '50' }]] }], [0, 'query', 0, 0, 'value'], /quoted number/],
    ['a bad relative day', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: '<', value: '-30days' }]] }], [0, 'query', 0, 0, 'value'], /is not a time/],
    ['an under-nested query', [{ name: 'q', table: 'asset', query: [{ searchFieldName: 'D', operator: 'exists', value: null }] }], [0, 'query', 0], /under-nested/],
    ['an over-nested query', [{ name: 'q', table: 'asset', query: [[[{ searchFieldName: 'D', operator: 'exists', value: null }]]] }], [0, 'query', 0, 0], /over-nested/],
    ['a fifth key', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: 'exists', value: null, typ: 'List' }]] }], [0, 'query', 0, 0, 'typ'], /unknown key; did you mean "type"\?/],
    ['an unknown table', [{ name: 'q', table: 'assets', query: [[{ searchFieldName: 'D', operator: 'exists', value: null }]] }], [0, 'table'], /must be asset or user; did you mean "asset"\?/],
    ['a name used twice', [{ name: 'q', table: 'asset', query: [[{ searchFieldName: 'D', operator: 'exists' }]] }, { name: 'q', table: 'user', query: [[{ searchFieldName: 'D', operator: 'exists' }]] }], [1, 'name'], /must be unique/],
  ])('refuses %s at its key', (_what, input, at, message) => {
    const r = parseSavedQueries(input);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.at).toEqual(at);
    expect(r.message).toMatch(message);
  });
});
