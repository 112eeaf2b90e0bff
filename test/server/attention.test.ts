import { describe, expect, it } from 'vitest';
import { ATTENTION_THRESHOLDS } from '../../src/attention.js';
import { ActionJobListSchema, ConnectorPageSchema, IngestionRunListSchema, LicenseRecordSchema } from '../../src/api/schemas.js';
import { COLLECTORS } from '../../src/collectors/index.js';
import { StateMemory } from '../../src/collectors/state-memory.js';
import type { CollectorContext } from '../../src/collectors/types.js';
import type { Sample } from '../../src/metrics/sample.js';
import { stackCause } from '../../src/server/cause.js';
import { attention, relativeTime, shortDuration } from '../../src/server/attention.js';
import { THRESHOLDS } from '../../scripts/gen-rules.js';
import { expectWellFormed, validated } from '../collectors/helpers.js';

const NOW = 1_800_000_000;
const s = (name: string, value: number, labels: Record<string, string> = {}): Sample => ({ name, value, labels: { stack: 'a', ...labels } });
const iso = (unix: number): string => new Date(unix * 1000).toISOString();

/** What the stack's CMDB sends, in the API's own shapes; the samples come from the real collectors. */
interface Bodies {
  readonly connector?: readonly Record<string, unknown>[];
  readonly license?: Record<string, unknown>;
  readonly ingestion?: readonly Record<string, unknown>[];
  readonly jobs?: Readonly<Record<string, readonly Record<string, unknown>[]>>;
}

function collected(b: Bodies): Sample[] {
  const ctx: CollectorContext = { now: NOW, timeZone: 'UTC', states: new StateMemory(), debug: () => {} };
  const out: Sample[] = [];
  if (b.connector) out.push(...COLLECTORS.connector(validated(ConnectorPageSchema, { content: b.connector }).content, ctx));
  if (b.license) out.push(...COLLECTORS.license(validated(LicenseRecordSchema, b.license), ctx));
  if (b.ingestion) out.push(...COLLECTORS.data_ingestion(validated(IngestionRunListSchema, { data_ingestion_runs: b.ingestion }).data_ingestion_runs, ctx));
  if (b.jobs) out.push(...COLLECTORS.action_jobs(Object.entries(b.jobs).map(([id, jobs]) => ({ id, value: validated(ActionJobListSchema, jobs) })), ctx));
  expectWellFormed(out);
  return out.map((x) => ({ ...x, labels: { stack: 'a', ...x.labels } }));
}

/** A connector run row written `ago` seconds before NOW. */
const connectorRun = (bridge: string, profile: string, status: string, ago: number) => ({
  bridge_name: bridge,
  profile: { profile_name: profile },
  platform: 'api',
  status,
  start_time: iso(NOW - ago - 600),
  end_time: iso(NOW - ago),
});
/** An internal merger row (platform ML-ENGINE, profile null) written `ago` seconds before NOW. */
const mergerRun = (bridge: string, ago: number) => ({ bridge_name: bridge, profile: null, platform: 'ML-ENGINE', status: 'success', end_time: iso(NOW - ago) });

describe('relative times', () => {
  it.each([
    [NOW + 14 * 60, 'in 14m'],
    [NOW + 14 * 60 + 20, 'in 14m 20s'],
    [NOW + 104, 'in 1m 44s'],
    [NOW + 3600, 'in 1h'],
    [NOW - 14 * 60, '14m ago'],
    [NOW + 30, 'in 30s'],
    [NOW - 90, '1m 30s ago'],
    [NOW + 5 * 3600, 'in 5h'],
    [NOW - 3 * 86400, '3d ago'],
    [NOW, 'now'],
  ])('%d reads %s', (at, text) => {
    expect(relativeTime(NOW, at)).toBe(text);
  });

  it('never says "from now" nor clamps a future time to 0', () => {
    for (let d = 1; d < 3 * 86400; d += 97) expect(relativeTime(NOW, NOW + d)).toMatch(/^in [1-9]\d*[smhd]( [1-9]\d*[smh])?$/);
    expect(shortDuration(0)).toBe('0s');
  });
});

/**
 * The thresholds of the shipped rules that the status page does not judge by, and why. Every other
 * threshold must be in ATTENTION_THRESHOLDS with the alert's value: a threshold added to the rules
 * fails the test below until it is placed on one side or the other.
 */
const NOT_ON_THE_STATUS_PAGE: Readonly<Record<string, string>> = {
  jobSelector: 'selects the scrape job in PromQL',
  stackSelector: 'selects stacks in PromQL',
  runbookBaseUrl: 'links of the alerts',
  for: 'how long an alert waits before firing; the page shows the state now',
  counterWindow: 'a PromQL rate window; the page has no history',
  endpointStaleIntervals: 'the page shows each endpoint state itself',
  ingestionNextRunGraceSeconds: 'overdue needs the next-run time against the clock over time',
  actionNextRunGraceSeconds: 'overdue needs the next-run time against the clock over time',
  inventoryDropRatio: 'compares with a 30-day average the page does not hold',
  rateBudgetRatio: 'a rate over a window; the page has no history',
  grafanaUrl: 'links of the notifications',
  unreachableWindow: 'a PromQL window; the page judges from the requests themselves (src/server/cause.ts)',
  unreachableKeepFiringFor: 'holds an alert back after recovery; the page shows the state now',
};

describe('attention thresholds', () => {
  it('equal the thresholds of the shipped alerts, both ways, over every threshold', () => {
    const rules = THRESHOLDS as unknown as Record<string, unknown>;
    const page = ATTENTION_THRESHOLDS as Record<string, unknown>;
    for (const [key, value] of Object.entries(page)) expect([key, rules[key]]).toEqual([key, value]);
    const unplaced = Object.keys(rules).filter((key) => !(key in page) && !(key in NOT_ON_THE_STATUS_PAGE));
    expect(unplaced).toEqual([]);
    const both = Object.keys(NOT_ON_THE_STATUS_PAGE).filter((key) => key in page || !(key in rules));
    expect(both).toEqual([]);
  });
});

describe('what needs attention', () => {
  const ok = [{ endpoint: 'data_ingestion' as const, state: 'ok' as const }];

  it('is empty and ok for a healthy stack', () => {
    const a = attention({
      now: NOW,
      endpoints: ok,
      samples: collected({
        connector: [connectorRun('c1', 'p', 'Success', 3600), mergerRun('asset_merger', 3600)],
        license: { licenseType: 'Enterprise', expireDate: iso(NOW + 100 * 86400) },
        ingestion: [{ id: 'scheduled__1', status: 'success', start_date: iso(NOW - 7200), end_date: iso(NOW - 3600) }],
        jobs: { '7': [{ id: 'j1', action_run_date: iso(NOW - 600), action_status: 'Success' }] },
      }),
    });
    expect(a.problems).toEqual([]);
    expect(a.state).toBe('ok');
    expect(a.licenseDays).toBeCloseTo(100, 0);
    expect(a.ingestion).toBe('success');
  });

  it('finds connectors in error and not run, failed Action jobs, the license, ingestion, merger and endpoints', () => {
    const max = ATTENTION_THRESHOLDS.connectorMaxRunAgeSeconds;
    const a = attention({
      now: NOW,
      endpoints: [
        { endpoint: 'data_ingestion', state: 'ok' },
        { endpoint: 'license', state: 'failing', outcome: '503' },
        { endpoint: 'actions', state: 'forbidden', outcome: '403', retryAt: NOW + 14 * 60 },
      ],
      samples: collected({
        connector: [
          connectorRun('c1', 'p', 'Error', 60),
          connectorRun('c2', 'p', 'Success', max + 60),
          connectorRun('c3', 'p', 'Success', 60),
          // The named profile's runs are old, but the connector ran under "Default profile": as the
          // alert (newest run over all profiles), not a problem.
          connectorRun('c4', 'p', 'Success', max + 3600),
          connectorRun('c4', 'Default profile', 'Success', 60),
          // 27 h: past the merger limit (26 h), well within the connectors' 2 days.
          mergerRun('asset_merger', 27 * 3600),
          mergerRun('user_merger', 3600),
        ],
        license: { licenseType: 'Enterprise', expireDate: iso(NOW + 5 * 86400) },
        ingestion: [
          { id: 'scheduled__2', status: 'failed', start_date: iso(NOW - 3600), end_date: iso(NOW - 1800) },
          { id: 'scheduled__1', status: 'success', start_date: iso(NOW - 30 * 3600), end_date: iso(NOW - ATTENTION_THRESHOLDS.ingestionMaxSuccessAgeSeconds - 3600) },
        ],
        jobs: {
          '7': [{ id: 'j2', action_run_date: iso(NOW - 600), action_status: 'FAILED' }, { id: 'j1', action_run_date: iso(NOW - 7200), action_status: 'Success' }],
          '8': [{ id: 'j2', action_run_date: iso(NOW - 600), action_status: 'success' }, { id: 'j1', action_run_date: iso(NOW - 7200), action_status: 'FAILED' }],
        },
      }),
    });
    const lines = a.problems.map((p) => `${p.severity} ${p.area} ${p.subject ?? ''}: ${p.text}`);
    expect(lines).toEqual([
      'critical license : 5 days left (critical within 7)',
      'critical ingestion : no successful run for 1d 3h (limit 1d 2h)',
      'warning connector c1/p: newest run failed',
      'warning connector c2: has not run for 2d (limit 2d)',
      'warning action 7: newest job FAILED',
      'warning ingestion : newest run failed',
      'warning merger asset_merger: has not run for 1d 3h (limit 1d 2h)',
      'warning endpoint license: down (503)',
      'warning endpoint actions: forbidden (403), next attempt in 14m',
    ]);
    expect(a.state).toBe('critical');
  });

  it('license bands: warning within 30 days, critical within 7, expired', () => {
    const band = (days: number) =>
      attention({ now: NOW, endpoints: [], samples: [s('cmdb_license_expiry_timestamp_seconds', NOW + days * 86400)] }).problems.map((p) => `${p.severity}: ${p.text}`);
    expect(band(31)).toEqual([]);
    expect(band(20)).toEqual(['warning: 20 days left (warning within 30)']);
    expect(band(3)).toEqual(['critical: 3 days left (critical within 7)']);
    expect(band(-1)).toEqual(['critical: expired on 2027-01-14 (1d ago)']);
  });

  it('an ingestion run running longer than the limit, and a list without any success', () => {
    const a = attention({
      now: NOW,
      endpoints: ok,
      samples: [s('cmdb_ingestion_run_in_progress', 1), s('cmdb_ingestion_last_run_start_timestamp_seconds', NOW - 7 * 3600)],
    });
    expect(a.ingestion).toBe('running');
    expect(a.problems.map((p) => p.text)).toEqual(['no successful run listed', 'running for 7h (limit 6h)']);
  });

  it('is pending while no endpoint has finished a poll', () => {
    expect(attention({ now: NOW, endpoints: [{ endpoint: 'license', state: 'pending' }], samples: [] }).state).toBe('pending');
  });
});

describe('pauses set by the CMDB', () => {
  const LICENSE = 'GET /CMDB/v2/system/metrics/license';
  it('a group paused by a 503 is a problem while the pause lasts, naming the 503, the group and when it ends', () => {
    const paused = attention({ samples: [], endpoints: [], now: NOW, pauses: [{ scope: 'group', group: 'license', until: NOW + 60, status: 503, endpoint: 'license', request: LICENSE }] });
    expect(paused.problems).toEqual([
      { severity: 'warning', area: 'endpoint', subject: 'license', text: `license requests paused by a 503 to ${LICENSE}, in 1m (a reload ends it)`, alert: 'CmdbEndpointDown', key: 'paused:license', source: 'license' },
    ]);
    expect(paused.state).toBe('warning');
    expect(attention({ samples: [], endpoints: [], now: NOW, pauses: [{ scope: 'group', group: 'license', until: NOW - 1, status: 503, endpoint: 'license', request: LICENSE }] }).problems).toEqual([]);
  });

  it('a pause of the whole stack is no problem line: it is the stack\'s cause (src/server/cause.ts), naming the status that set it', () => {
    const pause = { scope: 'stack', until: NOW + 14 * 60, status: 429, endpoint: 'license', request: LICENSE } as const;
    expect(attention({ samples: [], endpoints: [], now: NOW, pauses: [pause] }).problems).toEqual([]);
    const cause = stackCause({ now: NOW, unauthorized: false, endpoints: [], pause });
    expect(cause).toMatchObject({ alert: 'CmdbStackPaused', until: NOW + 14 * 60 });
    expect(cause?.text).toContain(`(a 429 to ${LICENSE})`);
  });
});

describe('what to do', () => {
  const every = attention({
    now: NOW,
    endpoints: [
      { endpoint: 'data_ingestion', state: 'ok' },
      { endpoint: 'license', state: 'failing', outcome: '503' },
      { endpoint: 'actions', state: 'forbidden', outcome: '403' },
    ],
    samples: [
      s('cmdb_connector_health', 1, { connector: 'c1', profile: 'p', health: 'error' }),
      s('cmdb_connector_last_run_timestamp_seconds', NOW - 3 * 86400, { connector: 'c2', profile: 'p' }),
      s('cmdb_action_info', 1, { action_id: '7', action_name: 'Nightly export', action_type: 't', action_group: 'g', schedule_type: 's' }),
      s('cmdb_action_last_job_status', 1, { action_id: '7', status: 'FAILED' }),
      s('cmdb_action_last_job_status', 1, { action_id: '9', status: 'FAILED' }),
      s('cmdb_license_expiry_timestamp_seconds', NOW - 86400),
      s('cmdb_ingestion_last_run_status', 1, { status: 'failed' }),
      s('cmdb_ingestion_run_in_progress', 1),
      s('cmdb_ingestion_last_run_start_timestamp_seconds', NOW - 7 * 3600),
      s('cmdb_merger_last_run_timestamp_seconds', NOW - 3 * 86400, { merger: 'asset_merger', connector: 'asset_merger' }),
      s('cmdb_query_refused', 1, { query: 'quoted-number' }),
      s('cmdb_query_refused', 0, { query: 'servers' }),
    ],
  });

  it('names a refused saved query, and only a refused one', () => {
    expect(every.problems.filter((p) => p.area === 'query').map((p) => [p.subject, p.alert, p.source])).toEqual([['quoted-number', 'CmdbQueryRefused', 'data_query']]);
  });

  it('names an Action by its name, with its id on hover; by its id when the list has no name for it', () => {
    const actions = every.problems.filter((p) => p.area === 'action').map((p) => [p.subject, p.subjectTitle]);
    expect(actions).toEqual([
      ['Nightly export', 'Action id 7'],
      ['9', 'Action id 9'],
    ]);
  });

  it('ties every problem to a shipped alert, whose runbook section says what to do', async () => {
    const { alertGroups } = await import('../../scripts/gen-rules.js');
    const shipped = new Set(alertGroups().flatMap((g) => g.rules.map((r) => r.alert)));
    expect(every.problems.length).toBeGreaterThanOrEqual(10);
    for (const p of every.problems) expect(shipped, `${p.area} ${p.text}`).toContain(p.alert);
    expect(every.problems.find((p) => p.area === 'license')?.alert).toBe('CmdbLicenseExpired');
  });

  it('says since when, from the data: the failed run, the job, the crossing of a limit', () => {
    const since = Object.fromEntries(every.problems.map((p) => [p.key, p.since === undefined ? undefined : p.since - NOW]));
    expect(since).toMatchObject({
      'CmdbLicenseExpired:': -86400,
      'CmdbConnectorNotRun:c2': -3 * 86400 + ATTENTION_THRESHOLDS.connectorMaxRunAgeSeconds,
      'CmdbIngestionRunFailed:': -7 * 3600,
      'CmdbIngestionRunTooLong:': -7 * 3600 + ATTENTION_THRESHOLDS.ingestionMaxRunSeconds,
      'CmdbMergerStale:asset_merger': -3 * 86400 + ATTENTION_THRESHOLDS.mergerMaxRunAgeSeconds,
      // Not in the data: since the page first saw them (src/server/stack-view.ts).
      'CmdbEndpointDown:license': undefined,
      'CmdbActionJobFailed:9': undefined,
    });
    expect(every.problems.find((p) => p.key === 'CmdbEndpointDown:license')).toMatchObject({ source: 'license', outcome: '503' });
    expect(every.problems.find((p) => p.key === 'CmdbConnectorError:c1/p')?.source).toBe('connector');
  });

  it('dates a connector\'s failed run by that run: each profile by its own newest run, as the data writes it (issue 37)', () => {
    // One connector, two profiles run one after another: prod failed 3 minutes before staging did,
    // and prod's run written with _time (the row's time on the real service) beats its start and end.
    const prod = { ...connectorRun('crm', 'prod', 'Error', 202), _time: NOW - 202 };
    const staging = { ...connectorRun('crm', 'staging', 'Error', 22), _time: NOW - 22 };
    const found = attention({ samples: collected({ connector: [prod, staging] }), endpoints: [], now: NOW });
    const since = Object.fromEntries(found.problems.filter((p) => p.alert === 'CmdbConnectorError').map((p) => [p.subject, (p.since as number) - NOW]));
    expect(since).toEqual({ 'crm/prod': -202, 'crm/staging': -22 });
  });
});
