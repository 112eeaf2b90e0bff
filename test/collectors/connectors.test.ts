import { describe, expect, it } from 'vitest';
import { ConnectorPageSchema } from '../../src/api/schemas.js';
import { newestRuns } from '../../src/api/connector-runs.js';
import { collectConnectors, connectorSteps } from '../../src/collectors/connectors.js';
import { StateMemory } from '../../src/collectors/state-memory.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import type { TestContext } from './helpers.js';
import { collect, context, find, fixture, fixtureText, stateSet, validated, valueOf } from './helpers.js';

const HOSTILE = 'Qualys "EU" \\ line1\nline2 — Überwachung ✓ {a="b"}';
const CS = { connector: 'crowdstrike', profile: 'cs-prod' };

function rows(file: string) {
  return validated(ConnectorPageSchema, fixture(`connectors/${file}`)).content;
}
function run(file: string, ctx: TestContext = context()) {
  return { samples: collect(collectConnectors, rows(file), ctx), ctx };
}

describe('connector collector: newest run per (bridge_name, profile name)', () => {
  it('keeps the newest row by _time although it is neither first nor last in the list', () => {
    const { samples } = run('history.json');
    expect(valueOf(samples, 'cmdb_connector_last_run_start_timestamp_seconds', CS)).toBe(1714636000);
    expect(valueOf(samples, 'cmdb_connector_last_run_end_timestamp_seconds', CS)).toBe(1714636750);
    expect(stateSet(samples, 'cmdb_connector_status', CS, 'status')).toEqual({ Error: 1 });
  });

  it.each<[string, string, string]>([
    ['only _utc (offsets compared as instants)', 'by-utc', 'newest'],
    ['only end_time (numbers and numeric text)', 'by-end', 'newest'],
    ['only start_time', 'by-start', 'newest'],
    ['_time before _utc of the same row', 'time-first', 'newest'],
    ['equal times: the later row', 'tie', 'second'],
    ['no time at all: the later row', 'no-time', 'second'],
    ['a dated row over a later undated one', 'dated-wins', 'dated'],
  ])('orders by %s', (_name, connector, version) => {
    const { samples } = run('ordering.json');
    const info = find(samples, 'cmdb_connector_info', { connector });
    expect(info.map((s) => s.labels.version)).toEqual([version]);
  });

  it.each<[string, string, string]>([
    ['profile object → profile_name', 'a', 'a-as-string'],
    ['profile object with another name', 'b', 'b'],
    ['profile null, absent, or an object without profile_name → "" (newest of them)', '', 'nameless-object'],
  ])('keys by profile name: %s', (_name, profile, version) => {
    const { samples } = run('ordering.json');
    expect(find(samples, 'cmdb_connector_info', { connector: 'multi', profile }).map((s) => s.labels.version)).toEqual([version]);
  });

  it('treats a profile string, an object with that profile_name, null and absent as the matching keys', () => {
    const { samples } = run('ordering.json');
    // "a" as object and as string share a key; null, absent and an object without profile_name share "".
    expect(find(samples, 'cmdb_connector_info', { connector: 'multi' }).map((s) => [s.labels.profile, s.labels.version])).toEqual([
      ['a', 'a-as-string'],
      ['b', 'b'],
      ['', 'nameless-object'],
    ]);
  });

  it('labels info with display_name, platform and version of the newest row', () => {
    const { samples } = run('history.json');
    expect(find(samples, 'cmdb_connector_info', CS)).toEqual([
      { name: 'cmdb_connector_info', labels: { ...CS, display_name: 'Crowdstrike', platform: 'api', version: '1.4.2' }, value: 1 },
    ]);
    expect(find(samples, 'cmdb_connector_info', { connector: 'merger' })[0]?.labels).toEqual({
      connector: 'merger',
      profile: '',
      display_name: 'Merger',
      platform: 'api',
      version: '1.4.2',
    });
  });
});

describe('connector collector: status and health', () => {
  it.each<[string, string | undefined, string]>([
    ['c0', 'Success', 'ok'],
    ['c1', 'SUCCESS', 'ok'],
    ['c2', ' success ', 'ok'],
    ['c3', 'Warning', 'warning'],
    ['c4', 'WARNING', 'warning'],
    ['c5', 'warning', 'warning'],
    ['c6', 'Warning&Error', 'error'],
    ['c7', 'Error', 'error'],
    ['c8', 'FAILED', 'error'],
    ['c9', 'error ', 'error'],
    ['c10', undefined, 'unknown'], // ""
    ['c11', undefined, 'unknown'], // whitespace only
    ['c12', undefined, 'unknown'], // null
    ['c13', undefined, 'unknown'], // absent
  ])('%s: status %j → health %s, all four health states present', (connector, status, health) => {
    const { samples } = run('statuses.json');
    const key = { connector, profile: 'p' };
    expect(stateSet(samples, 'cmdb_connector_health', key, 'health')).toEqual({
      ok: 0,
      warning: 0,
      error: 0,
      unknown: 0,
      [health]: 1,
    });
    expect(stateSet(samples, 'cmdb_connector_status', key, 'status')).toEqual(status === undefined ? {} : { [status]: 1 });
  });

  it('remembers earlier statuses with the same StateMemory and forgets connectors that vanished', () => {
    const states = new StateMemory();
    const first = run('history.json', context({ states })).samples;
    expect(stateSet(first, 'cmdb_connector_status', CS, 'status')).toEqual({ Error: 1 });
    expect(stateSet(first, 'cmdb_connector_status', { connector: 'crowdstrike', profile: 'cs-lab' }, 'status')).toEqual({ SUCCESS: 1 });

    const second = run('history-second-poll.json', context({ states })).samples;
    expect(stateSet(second, 'cmdb_connector_status', CS, 'status')).toEqual({ Error: 0, FAILED: 1 });
    // The merger row has no status: its state set stays empty, its health is unknown.
    expect(find(second, 'cmdb_connector_status', { connector: 'merger' })).toEqual([]);
    expect(valueOf(second, 'cmdb_connector_health', { connector: 'merger', health: 'unknown' })).toBe(1);
    expect(find(second, 'cmdb_connector_status', { profile: 'cs-lab' })).toEqual([]);

    const third = run('history-third-poll.json', context({ states })).samples;
    expect(stateSet(third, 'cmdb_connector_status', CS, 'status')).toEqual({ Error: 0, FAILED: 0, Success: 1 });
    // cs-lab vanished in the second poll, so its SUCCESS of the first poll is forgotten.
    expect(stateSet(third, 'cmdb_connector_status', { connector: 'crowdstrike', profile: 'cs-lab' }, 'status')).toEqual({ Error: 1 });
  });

  it('records only the newest status of each poll, not those of older rows in the history', () => {
    const { samples } = run('history.json');
    expect(Object.keys(stateSet(samples, 'cmdb_connector_status', CS, 'status'))).toEqual(['Error']);
  });
});

describe('connector collector: run values', () => {
  it.each<[string, string, Record<string, string>, number | undefined]>([
    ['duration_minutes × 60', 'history.json', CS, 750],
    ['end − start when duration_minutes is absent', 'history.json', { connector: 'merger' }, 900],
    ['end − start from ISO times with a fraction', 'bad-values.json', { connector: 'derived-duration' }, 1800.5],
    ['duration_minutes sent as text', 'bad-values.json', { connector: 'ms-times' }, 90],
    ['nothing when start and end do not parse', 'bad-values.json', { connector: 'bad-times' }, undefined],
    ['nothing when the end is before the start', 'bad-values.json', { connector: 'end-before-start' }, undefined],
    ['nothing for negative duration_minutes', 'bad-values.json', { connector: 'negative-minutes' }, undefined],
  ])('duration: %s', (_name, file, key, seconds) => {
    expect(valueOf(run(file).samples, 'cmdb_connector_last_run_duration_seconds', key)).toBe(seconds);
  });

  it('reads epoch milliseconds as milliseconds for start and end', () => {
    const { samples } = run('bad-values.json');
    expect(valueOf(samples, 'cmdb_connector_last_run_start_timestamp_seconds', { connector: 'ms-times' })).toBe(1714600000);
    expect(valueOf(samples, 'cmdb_connector_last_run_end_timestamp_seconds', { connector: 'ms-times' })).toBe(1714600060);
  });

  it('drops unparseable times with a debug call naming the field, and emits no NaN', () => {
    const { samples, ctx } = run('bad-values.json');
    const key = { connector: 'bad-times', profile: 'p' };
    expect(find(samples, 'cmdb_connector_last_run_start_timestamp_seconds', key)).toEqual([]);
    expect(find(samples, 'cmdb_connector_last_run_end_timestamp_seconds', key)).toEqual([]);
    expect(find(samples, 'cmdb_connector_input_records', key)).toEqual([]);
    const fields = ctx.debugCalls.filter((c) => c.fields?.connector === 'bad-times').map((c) => c.fields?.field);
    expect(fields).toEqual(['start_time', 'end_time']);
    expect(ctx.debugCalls.some((c) => c.fields?.connector === 'end-before-start')).toBe(true);
    expect(ctx.debugCalls.some((c) => c.fields?.connector === 'negative-minutes')).toBe(true);
  });

  it('emits input and output records', () => {
    const { samples } = run('history.json');
    expect(valueOf(samples, 'cmdb_connector_input_records', CS)).toBe(1000);
    expect(valueOf(samples, 'cmdb_connector_output_records', CS)).toBe(990);
  });

  it.each<[string, string, Record<string, string>, Record<string, number>]>([
    ['all four lists, an empty one counts 0', 'history.json', CS, { expected: 5, raw: 3, actual_input: 2, output: 0 }],
    ['only the lists that are present', 'history.json', { connector: 'crowdstrike', profile: 'cs-lab' }, { expected: 2 }],
    ['no lists, no samples', 'history.json', { connector: 'merger' }, {}],
    ['a list of the wrong type is absent', 'bad-values.json', { connector: 'odd-events' }, { expected: 4 }],
  ])('fields: %s', (_name, file, key, kinds) => {
    expect(stateSet(run(file).samples, 'cmdb_connector_fields', key, 'kind')).toEqual(kinds);
  });

  it.each<[string, string, Record<string, string>, number | undefined]>([
    ['distinct expected fields not received', 'history.json', CS, 2], // ip, os (os listed twice)
    ['an absent actual list counts as empty', 'history.json', { connector: 'crowdstrike', profile: 'cs-lab' }, 2],
    ['an actual list of null counts as empty; non-text fields compared by value', 'bad-values.json', { connector: 'odd-events' }, 3],
    ['no expected list, no sample', 'history.json', { connector: 'merger' }, undefined],
  ])('missing fields: %s', (_name, file, key, missing) => {
    expect(valueOf(run(file).samples, 'cmdb_connector_missing_fields', key)).toBe(missing);
  });

  it.each<[string, string, Record<string, string>, Record<string, number>]>([
    ['a list with several levels; an object counts once per key; a string element is UNKNOWN', 'history.json', CS, { ERROR: 2, WARNING: 1, INFO: 1, DEBUG: 1, UNKNOWN: 1 }],
    ['a plain string is one UNKNOWN', 'history.json', { connector: 'crowdstrike', profile: 'cs-lab' }, { ERROR: 0, WARNING: 0, UNKNOWN: 1 }],
    ['absent: ERROR and WARNING still at 0', 'history.json', { connector: 'merger' }, { ERROR: 0, WARNING: 0 }],
    ['an empty list: ERROR and WARNING at 0', 'history-second-poll.json', CS, { ERROR: 0, WARNING: 0 }],
    ['odd elements: null skipped, other non-objects UNKNOWN, keys as sent', 'bad-values.json', { connector: 'odd-events' }, { ERROR: 1, WARNING: 0, '': 1, warning: 1, UNKNOWN: 2 }],
    ['a blank string is no message', 'bad-values.json', { connector: 'empty-string-events' }, { ERROR: 0, WARNING: 0 }],
  ])('event messages: %s', (_name, file, key, levels) => {
    expect(stateSet(run(file).samples, 'cmdb_connector_event_messages', key, 'level')).toEqual(levels);
  });
});

describe('connector collector: label safety', () => {
  it('passes hostile label text through unchanged', () => {
    const { samples } = run('history.json');
    const connector = 'qualys "eu"\\\n';
    expect(find(samples, 'cmdb_connector_info', { connector })[0]?.labels).toEqual({
      connector,
      profile: HOSTILE,
      display_name: HOSTILE,
      platform: 'api',
      version: 'v2 "beta"',
    });
    expect(stateSet(samples, 'cmdb_connector_status', { connector }, 'status')).toEqual({ 'Warning&Error': 1 });
  });

  it.each(PLANTED_SECRETS.map((s) => [s]))('never puts the planted secret %s, present in the fixture, into a sample', (secret) => {
    expect(fixtureText('connectors/history.json')).toContain(secret);
    const { samples, ctx } = run('history.json');
    expect(JSON.stringify(samples)).not.toContain(secret);
    expect(JSON.stringify(ctx.debugCalls)).not.toContain(secret);
  });

  it('gives no sample a stack label', () => {
    for (const s of run('history.json').samples) expect(s.labels).not.toHaveProperty('stack');
  });
});

describe('connector collector: rows shaped like the real service', () => {
  const real = () => run('real-service.json').samples;

  it('exports the last-run time from _time, else _utc, for rows without start/end', () => {
    const samples = real();
    expect(valueOf(samples, 'cmdb_connector_last_run_timestamp_seconds', { connector: 'okta_user', profile: 'Prod Tenant' })).toBe(1785163900);
    expect(valueOf(samples, 'cmdb_connector_last_run_timestamp_seconds', { connector: 'ldap_users', profile: 'corp' })).toBe(
      Date.parse('2026-07-27T10:00:00Z') / 1000,
    );
    expect(find(samples, 'cmdb_connector_last_run_start_timestamp_seconds')).toEqual([]);
    expect(find(samples, 'cmdb_connector_last_run_end_timestamp_seconds')).toEqual([]);
  });

  it('keeps a run filed under "Default profile" apart from the named profile (alerts take the max per connector)', () => {
    const samples = real();
    expect(valueOf(samples, 'cmdb_connector_last_run_timestamp_seconds', { connector: 'aws_ec2', profile: 'Default profile' })).toBe(1785164000);
    expect(valueOf(samples, 'cmdb_connector_last_run_timestamp_seconds', { connector: 'aws_ec2', profile: 'Prod account' })).toBe(1784300000);
  });

  it('maps ML-ENGINE rows to the merger families only', () => {
    const samples = real();
    expect(find(samples, 'cmdb_connector_info', { connector: 'Lucidum Asset Merger' })).toEqual([]);
    expect(find(samples, 'cmdb_connector_health', { connector: 'Lucidum User Merger' })).toEqual([]);
    expect(valueOf(samples, 'cmdb_merger_last_run_timestamp_seconds', { merger: 'Lucidum Asset Merger' })).toBe(1785166060);
    // No _time: _utc comes before end_time, as for connectors.
    expect(valueOf(samples, 'cmdb_merger_last_run_timestamp_seconds', { merger: 'Lucidum User Merger' })).toBe(
      Date.parse('2026-07-20T15:01:00Z') / 1000,
    );
    expect(valueOf(samples, 'cmdb_merger_last_run_end_timestamp_seconds', { merger: 'Lucidum Asset Merger' })).toBe(1785166058);
    expect(stateSet(samples, 'cmdb_merger_health', { merger: 'Lucidum Asset Merger' }, 'health')).toEqual({ ok: 0, warning: 1, error: 0, unknown: 0 });
    expect(stateSet(samples, 'cmdb_merger_status', { merger: 'Lucidum User Merger' }, 'status')).toEqual({ SUCCESS: 1 });
    expect(valueOf(samples, 'cmdb_merger_output_records', { merger: 'Lucidum Asset Merger' })).toBe(34201);
  });

  it('maps action rows (platform action in any case) to the action history families, never to connector families', () => {
    const samples = real();
    expect(find(samples, 'cmdb_connector_info', { connector: 'webhook' })).toEqual([]);
    const key = { action_type: 'webhook', action_name: 'Recertification webhook' };
    expect(valueOf(samples, 'cmdb_action_history_last_run_timestamp_seconds', key)).toBe(1785132004);
    expect(stateSet(samples, 'cmdb_action_history_health', key, 'health')).toEqual({ ok: 1, warning: 0, error: 0, unknown: 0 });
    expect(valueOf(samples, 'cmdb_action_history_output_records', key)).toBe(353);
  });

  it('never puts the embedded profile secret or event texts into samples', () => {
    const text = JSON.stringify(real());
    expect(text).not.toContain('gAAAAABfake-secret');
    expect(text).not.toContain('abc123');
    expect(text).not.toContain('ListAccounts');
  });
});

describe('connectorSteps: the same mapping a step of runs at a time (the poller answers scrapes between steps)', () => {
  it('yields after every step and returns what collectConnectors returns, state memory included', () => {
    const runs = rows('history.json');
    const whole = context();
    const expected = collectConnectors(runs, whole);
    const stepped = context();
    const steps = connectorSteps(runs, stepped, 1);
    let pauses = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) pauses++;
    expect(step.value).toEqual(expected);
    // One pause after each kept run (the newest of each key), the last one included.
    expect(pauses).toBe([...newestRuns(runs, 'UTC')].length);
    expect(pauses).toBeGreaterThan(1);
    expect(stepped.states).toEqual(whole.states);
  });
});
