import { describe, expect, it } from 'vitest';
import { ATTENTION_THRESHOLDS } from '../../src/attention.js';
import type { Sample } from '../../src/metrics/sample.js';
import { attention, relativeTime, shortDuration } from '../../src/server/attention.js';
import { THRESHOLDS } from '../../scripts/gen-rules.js';

const NOW = 1_800_000_000;
const s = (name: string, value: number, labels: Record<string, string> = {}): Sample => ({ name, value, labels: { stack: 'a', ...labels } });

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

describe('attention thresholds', () => {
  it('equal the thresholds of the shipped alerts', () => {
    for (const [key, value] of Object.entries(ATTENTION_THRESHOLDS)) expect([key, THRESHOLDS[key as keyof typeof THRESHOLDS]]).toEqual([key, value]);
  });
});

describe('what needs attention', () => {
  const ok = [{ endpoint: 'data_ingestion' as const, state: 'ok' as const }];

  it('is empty and ok for a healthy stack', () => {
    const a = attention({
      now: NOW,
      endpoints: ok,
      samples: [
        s('cmdb_connector_health', 1, { connector: 'c1', profile: 'p', health: 'ok' }),
        s('cmdb_connector_last_run_end_timestamp_seconds', NOW - 3600, { connector: 'c1', profile: 'p' }),
        s('cmdb_action_last_job_status', 1, { action_id: '7', status: 'Success' }),
        s('cmdb_license_expiry_timestamp_seconds', NOW + 100 * 86400),
        s('cmdb_ingestion_last_run_status', 1, { status: 'success' }),
        s('cmdb_ingestion_last_success_timestamp_seconds', NOW - 3600),
      ],
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
      samples: [
        s('cmdb_connector_health', 1, { connector: 'c1', profile: 'p', health: 'error' }),
        s('cmdb_connector_health', 0, { connector: 'c2', profile: 'p', health: 'error' }),
        s('cmdb_connector_last_run_end_timestamp_seconds', NOW - max - 60, { connector: 'c2', profile: 'p' }),
        // The explicit last run wins over the end time.
        s('cmdb_connector_last_run_end_timestamp_seconds', NOW - max - 60, { connector: 'c3', profile: 'p' }),
        s('cmdb_connector_last_run_timestamp_seconds', NOW - 60, { connector: 'c3', profile: 'p' }),
        s('cmdb_action_last_job_status', 1, { action_id: '7', status: 'FAILED' }),
        s('cmdb_action_last_job_status', 0, { action_id: '8', status: 'FAILED' }),
        s('cmdb_license_expiry_timestamp_seconds', NOW + 5 * 86400),
        s('cmdb_ingestion_last_run_status', 1, { status: 'failed' }),
        s('cmdb_ingestion_last_success_timestamp_seconds', NOW - ATTENTION_THRESHOLDS.ingestionMaxSuccessAgeSeconds - 3600),
        s('cmdb_merger_last_run_timestamp_seconds', NOW - max - 3600, { connector: 'merger_assets' }),
      ],
    });
    const lines = a.problems.map((p) => `${p.severity} ${p.area} ${p.subject ?? ''}: ${p.text}`);
    expect(lines).toEqual([
      'critical license : 5 days left (critical within 7)',
      'critical ingestion : no successful run for 1d 3h (limit 1d 2h)',
      'warning connector c1/p: newest run failed',
      'warning connector c2/p: has not run for 2d (limit 2d)',
      'warning action 7: newest job FAILED',
      'warning ingestion : newest run failed',
      'warning merger merger_assets: has not run for 2d 1h (limit 2d)',
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

describe('a stack paused by a server Retry-After', () => {
  it('is a problem while the pause lasts, naming when it ends and that a reload ends it', () => {
    const paused = attention({ samples: [], endpoints: [], now: NOW, pausedUntil: NOW + 14 * 60 });
    expect(paused.problems).toEqual([{ severity: 'warning', area: 'endpoint', text: 'every request paused by a 429 Retry-After, in 14m (a reload ends it)', alert: 'CmdbStackPaused' }]);
    expect(paused.state).toBe('warning');
    expect(attention({ samples: [], endpoints: [], now: NOW, pausedUntil: NOW - 1 }).problems).toEqual([]);
  });
});

describe('what to do', () => {
  const every = attention({
    now: NOW,
    pausedUntil: NOW + 60,
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
    ],
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

  it('the runbook links point where the shipped rules point', async () => {
    const { RUNBOOK_BASE_URL } = await import('../../src/attention.js');
    const { MIXIN_DEFAULTS } = await import('../../scripts/mixin.js');
    expect(RUNBOOK_BASE_URL).toBe(MIXIN_DEFAULTS.runbookBaseUrl);
  });
});
