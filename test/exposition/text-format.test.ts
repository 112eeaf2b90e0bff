import { describe, expect, it } from 'vitest';
import { escapeHelp, escapeLabelValue, formatLabels, formatValue } from '../../src/metrics/series-text.js';
import { writeFamily } from '../../src/exposition/text-format.js';
import { family } from '../../src/metrics/catalogue.js';

describe('label value escaping', () => {
  it.each([
    ['plain', 'plain'],
    ['say "hi"', 'say \\"hi\\"'],
    ['C:\\temp', 'C:\\\\temp'],
    ['line1\nline2', 'line1\\nline2'],
    ['Zürich 東京 🚀', 'Zürich 東京 🚀'],
    ['\\"\n', '\\\\\\"\\n'],
    ['tab\tstays', 'tab\tstays'],
  ])('%j is written as %j', (input, expected) => {
    expect(escapeLabelValue(input)).toBe(expected);
  });
});

describe('HELP escaping', () => {
  it('escapes backslashes and line feeds but not quotes', () => {
    expect(escapeHelp('a\\b\n"c"')).toBe('a\\\\b\\n"c"');
  });
});

describe('value formatting', () => {
  it.each([
    [1, '1'],
    [0, '0'],
    [-3.5, '-3.5'],
    [1e21, '1e+21'],
    [Infinity, '+Inf'],
    [-Infinity, '-Inf'],
    [NaN, 'NaN'],
  ])('%s is written as %s', (value, expected) => {
    expect(formatValue(value)).toBe(expected);
  });
});

describe('label formatting', () => {
  it('writes labels in the family order, whatever the object order', () => {
    const f = family('cmdb_connector_health');
    expect(formatLabels(f.labels, { health: 'ok', profile: 'p', stack: 's', connector: 'c' })).toBe(
      '{stack="s",connector="c",profile="p",health="ok"}',
    );
  });
  it('writes nothing for a series without labels', () => {
    expect(formatLabels([], {})).toBe('');
  });
});

describe('writeFamily', () => {
  it('writes HELP, TYPE and one line per series', () => {
    const text = writeFamily({ family: family('cmdb_assets'), series: [{ labels: { stack: 'a' }, value: 12 }] });
    expect(text.split('\n')).toEqual([
      expect.stringMatching(/^# HELP cmdb_assets .*assetCount of GET \/CMDB\/v2\/system\/metrics\/data, polled/),
      '# TYPE cmdb_assets gauge',
      'cmdb_assets{stack="a"} 12',
      '',
    ]);
  });
  it('writes nothing at all for a family without series', () => {
    expect(writeFamily({ family: family('cmdb_assets'), series: [] })).toBe('');
  });
});
