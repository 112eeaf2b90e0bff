/**
 * The replay reruns a unit's collector only when its input changed, at the step before a change
 * and for an hour after one; in between it repeats its lines. These tests hold it to the plain
 * definition: the daemon's collector run at every step over the history known then, with one
 * state memory for the stack, as a running daemon would have.
 */
import { describe, expect, it } from 'vitest';
import type { StackHistory } from '../../src/backfill/history.js';
import { BACKFILLED_FAMILIES, OMITTED_FAMILIES, replayStack } from '../../src/backfill/replay.js';
import type { Action, ActionJob, ConnectorRun, IngestionRun } from '../../src/api/schemas.js';
import { collectActionJobs } from '../../src/collectors/action-jobs.js';
import { collectConnectors } from '../../src/collectors/connectors.js';
import { collectIngestionRuns } from '../../src/collectors/ingestion-runs.js';
import { StateMemory } from '../../src/collectors/state-memory.js';
import type { CollectorContext } from '../../src/collectors/types.js';
import { FAMILIES } from '../../src/metrics/catalogue.js';
import type { Sample } from '../../src/metrics/sample.js';
import { formatLabels, formatValue } from '../../src/metrics/series-text.js';
import { testStack } from '../helpers/stack.js';

const T0 = Date.parse('2026-11-01T00:00:00Z') / 1000;
const STEP = 300;
const STACK = testStack({ name: 'st' });

const iso = (s: number) => new Date(s * 1000).toISOString();

function emptyHistory(over: Partial<StackHistory>): StackHistory {
  return { days: new Map(), connectorRows: undefined, ingestionRuns: undefined, actions: undefined, actionJobs: new Map(), changes: { asset: new Map(), user: new Map() }, missing: [], ...over };
}

function lines(samples: Sample[]): string[] {
  const backfilled = new Set(BACKFILLED_FAMILIES.map((f) => f.name));
  return samples
    .filter((s) => backfilled.has(s.name))
    .map((s) => `${s.name}${formatLabels(FAMILIES.get(s.name)?.labels ?? [], { job: 'j', stack: 'st', ...s.labels })} ${formatValue(s.value)}`)
    .sort();
}

/** Replay lines at every step of [from, to] of one group, against the collector run plainly at each step. */
function compare(history: StackHistory, group: string, naive: (t: number, ctx: CollectorContext) => Sample[], from: number, to: number): number {
  const replay = replayStack({ stack: STACK, history, step: STEP, targetLabels: { job: 'j' } }).find((r) => r.group === group);
  if (!replay) throw new Error(group);
  const states = new StateMemory();
  let compared = 0;
  for (let t = from; t <= to; t += STEP) {
    const got: string[] = [];
    replay.linesAt(t, (l) => got.push(l.text));
    const want = lines(naive(t, { now: t, timeZone: 'UTC', states, debug: () => undefined }));
    expect([t, got.sort()]).toEqual([t, want]);
    compared += want.length;
  }
  return compared;
}

describe('replay over the history as known at each step', () => {
  it('connectors: the same series and values as the collector run at every step, state memory included', () => {
    const statuses = ['SUCCESS', 'Error', 'WARNING', 'Partial sync', 'SUCCESS', 'Error'];
    const rows: ConnectorRun[] = [];
    for (let d = 0; d < 6; d++) {
      // One connector once a day at varying times; another twice a day; a merger.
      rows.push({ bridge_name: 'ad', profile: { profile_name: 'prod' }, platform: 'x', status: statuses[d], _time: T0 + d * 86_400 + 3600 * (d + 1), input_records: d, event_messages: [{ ERROR: 'e' }] } as unknown as ConnectorRun);
      for (const h of [2, 14]) {
        rows.push({ bridge_name: 'sn', profile: 'p', platform: 'x', status: statuses[(d + h) % statuses.length], _time: T0 + d * 86_400 + h * 3600 + 17 } as unknown as ConnectorRun);
      }
      rows.push({ bridge_name: 'merger', profile: null, platform: 'ML-ENGINE', status: d % 2 ? 'SUCCESS' : 'FAILED', _time: T0 + d * 86_400 + 5000 } as unknown as ConnectorRun);
    }
    const compared = compare(
      emptyHistory({ connectorRows: rows }),
      'connectors',
      (t, ctx) => collectConnectors(rows.filter((r) => (r._time as number) <= t), ctx),
      T0,
      T0 + 6 * 86_400,
    );
    expect(compared).toBeGreaterThan(10_000);
  });

  it('Action jobs: the last job status as a state set remembers earlier statuses for an hour, as live', () => {
    const jobs: ActionJob[] = [];
    const outcome = ['SUCCESS', 'FAILED', 'Cancelled', 'SUCCESS', 'Timeout', 'SUCCESS'];
    for (let k = 0; k < 30; k++) jobs.push({ action_run_date: iso(T0 + k * 2500 + (k % 3) * 700), action_status: outcome[k % outcome.length], action_result_number: k } as ActionJob);
    compare(
      emptyHistory({ actionJobs: new Map([['a1', jobs]]) }),
      'actionJobs',
      (t, ctx) => {
        const known = jobs.filter((j) => Date.parse(j.action_run_date as string) / 1000 <= t);
        return known.length === 0 ? [] : collectActionJobs([{ id: 'a1', value: known }], ctx);
      },
      T0 - 3600,
      T0 + 30 * 2500 + 4 * 3600,
    );
  });

  it('ingestion: a run that ended later counts as running before its end', () => {
    const runs: IngestionRun[] = [];
    for (let k = 0; k < 20; k++) {
      const start = T0 + k * 3000;
      runs.push({ id: `scheduled__${iso(start)}`, status: k % 4 === 3 ? 'failed' : 'success', start_date: iso(start), end_date: iso(start + 900 + k * 60) } as IngestionRun);
    }
    const replay = replayStack({ stack: STACK, history: emptyHistory({ ingestionRuns: runs }), step: STEP }).find((r) => r.group === 'ingestion');
    const at = (t: number) => {
      const got: string[] = [];
      replay?.linesAt(t, (l) => got.push(l.text));
      return got;
    };
    expect(at(T0 - 300)).toEqual(['cmdb_ingestion_run_in_progress{stack="st"} 0']);
    expect(at(T0 + 600)).toContain('cmdb_ingestion_run_in_progress{stack="st"} 1');
    expect(at(T0 + 600)).toContain('cmdb_ingestion_last_run_status{stack="st",status="running"} 1');
    compare(
      emptyHistory({ ingestionRuns: runs }),
      'ingestion',
      (t, ctx) =>
        collectIngestionRuns(
          runs
            .filter((r) => Date.parse(r.start_date as string) / 1000 <= t)
            .map((r) => (Date.parse(r.end_date as string) / 1000 > t ? { ...r, status: 'running', end_date: null } : r)),
          ctx,
        ),
      T0 - 600,
      T0 + 20 * 3000 + 7200,
    );
  });

  it('an Action whose jobs could not be read has no series at all; with the jobs endpoint off, the list says its last run', () => {
    const action = (id: string) => ({ actionId: id, actionName: `A ${id}`, actionType: 'webhook', actionGroup: 'g', scheduleType: 'daily', createdAt: iso(T0 - 86_400), lastRunAt: iso(T0 + 600), status: 'IDLE', nextRunAt: null }) as unknown as Action;
    const job = { action_run_date: iso(T0 + 600), action_status: 'SUCCESS', results: 3 } as unknown as ActionJob;
    const history = emptyHistory({ actions: [action('read'), action('failed')], actionJobs: new Map([['read', [job]]]) });
    const seen = (stack = STACK, h = history) => {
      const replay = replayStack({ stack, history: h, step: STEP }).find((r) => r.group === 'actions');
      const got: Array<{ text: string; source: string }> = [];
      replay?.linesAt(T0 + 900, (l) => got.push({ text: l.text, source: l.source }));
      return got;
    };
    const lines = seen();
    expect(lines.some((l) => l.text.includes('action_id="read"'))).toBe(true);
    expect(lines.filter((l) => l.text.includes('action_id="failed"'))).toEqual([]);
    expect(new Set(lines.map((l) => l.source))).toEqual(new Set(['action-jobs/read']));
    // The jobs endpoint off: no jobs are read, and the list's lastRunAt is what is known.
    const listOnly = seen(testStack({ name: 'st', disabledEndpoints: ['action_jobs'] }), { ...history, actionJobs: new Map() });
    expect(listOnly.some((l) => l.text.startsWith('cmdb_action_last_run_timestamp_seconds{') && l.text.includes('action_id="failed"'))).toBe(true);
    expect(new Set(listOnly.map((l) => l.source))).toEqual(new Set(['actions']));
  });

  it('writes no family it leaves out, and only snapshot families of the CMDB', () => {
    for (const f of BACKFILLED_FAMILIES) {
      expect(f.origin).toBe('snapshot');
      expect(f.endpoint).toBeDefined();
      expect(OMITTED_FAMILIES.has(f.name)).toBe(false);
      expect(f.type).toBe('gauge');
    }
    const names = BACKFILLED_FAMILIES.map((f) => f.name);
    expect(names).not.toContain('cmdb_license_expiry_timestamp_seconds');
    expect(names).not.toContain('cmdb_ingestion_task_status');
    expect(names).not.toContain('cmdb_endpoint_up');
  });
});
