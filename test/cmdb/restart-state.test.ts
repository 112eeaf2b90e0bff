/**
 * What a restart keeps of the client's side (--storage.path): the connector history reader's cursor,
 * the client's spellings and plan (never its token), and the budget's sends. Each goes out as JSON
 * and comes back so that the next process reads on where the last one stopped.
 */
import { describe, expect, it } from 'vitest';
import { runForDisk } from '../../src/api/connector-runs.js';
import type { ConnectorRun } from '../../src/api/schemas.js';
import { budgetFromSends, RequestBudget, spentBudget, WINDOW_MS } from '../../src/cmdb/budget.js';
import { clientStateFrom } from '../../src/cmdb/client-state.js';
import { ConnectorHistoryReader, historySettings as historySettingsOf } from '../../src/cmdb/readers/index.js';
import { collectConnectors } from '../../src/collectors/connectors.js';
import { StateMemory } from '../../src/collectors/state-memory.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { waitFor } from '../helpers/wait.js';
import { makeClient } from './helpers/client.js';
import { requestsTo, sim, simStack } from './helpers/sim.js';

const SIZE = { connectors: 30, profilesPerConnector: 2, runsPerConnector: 10 };
const json = <T>(value: T): unknown => JSON.parse(JSON.stringify(value)) as unknown;

function collected(runs: ConnectorRun[]) {
  return collectConnectors(runs, { now: 1_800_000_000, timeZone: 'UTC', states: new StateMemory(), debug: () => undefined });
}

describe('the connector history cursor across a restart', () => {
  it('the next process reads on incrementally from the rows the last one held, and the file holds no message text', async () => {
    const s = await sim({ size: SIZE, connectorPeriodSeconds: 86_400 });
    const stack = simStack(s, { paging: { connectorPageSize: 100 } });
    const first = makeClient(stack).client;
    const read = await first.readConnectors();
    const state = first.historyState();
    const text = JSON.stringify(state);
    // The rows read carried planted secrets in their event messages; the state keeps none of them.
    expect(PLANTED_SECRETS.some((secret) => JSON.stringify(read.runs).includes(secret))).toBe(true);
    for (const secret of PLANTED_SECRETS) expect(text).not.toContain(secret);

    const reader = ConnectorHistoryReader.fromState(historySettingsOf(stack), json(state));
    expect(reader).toBeDefined();
    const second = makeClient(stack, { history: reader }).client;
    s.clearRequests();
    const again = await second.readConnectors();
    const queries = requestsTo(s, 'connector').map((r) => new URLSearchParams(r.rawQuery));
    expect(queries.map((q) => [q.get('page'), q.get('size'), q.get('sort')])).toEqual([['0', '25', '_time,desc']]);
    expect(collected(again.runs)).toEqual(collected(read.runs));
    expect(second.connectorScan().pageSize).toBe(100);
  });

  it('a full scan stopped half-way goes on from its next page in the next process, with the same rows as a whole scan, and no message text kept', async () => {
    const s = await sim({ size: SIZE, connectorPeriodSeconds: 86_400 });
    const stack = simStack(s, { paging: { connectorPageSize: 100 } });
    const wholeReader = makeClient(stack).client;
    const whole = (await wholeReader.readConnectors()).runs;
    // The first process: its fourth page is held until the "kill"; what the state says meanwhile is what a restart finds.
    s.clearRequests();
    s.addFault({ endpoint: 'connector', query: 'page=3&size=100&sort=_time%2Cdesc', hold: true });
    const first = makeClient(stack).client;
    const reading = first.readConnectors().catch(() => undefined);
    await waitFor('the fourth page asked (and held)', () => requestsTo(s, 'connector').some((r) => r.rawQuery.startsWith('page=3&')));
    expect(first.historyState()).toBeUndefined();
    const marks = first.stateMark();
    await first.prepareState();
    const state = json(first.historyState()) as { scan?: Record<string, unknown> & { runs: unknown[] } };
    expect(marks).toBe(3);
    expect(state.scan).toMatchObject({ sort: '_time,desc', page: 3, size: 100, pagesRead: 3, rowsRead: 300 });
    expect(state.scan?.runs.length).toBeGreaterThan(0);
    for (const secret of PLANTED_SECRETS) expect(JSON.stringify(state)).not.toContain(secret);
    s.clearFaults();
    await reading;

    const reader = ConnectorHistoryReader.fromState(historySettingsOf(stack), state);
    const second = makeClient(stack, { history: reader }).client;
    // Written again before its scan went on: the pages kept are kept still.
    expect((json(second.historyState()) as typeof state).scan).toEqual(state.scan);
    s.clearRequests();
    const read = await second.readConnectors();
    const pages = requestsTo(s, 'connector').map((r) => new URLSearchParams(r.rawQuery).get('page'));
    expect(pages[0]).toBe('3');
    expect(pages).not.toContain('0');
    expect(collected(read.runs)).toEqual(collected(whole.map(runForDisk)));
    expect(second.connectorScan().progress).toMatchObject({ kind: 'full', pagesRead: pages.length + 3, rowsRead: wholeReader.connectorScan().progress?.rowsRead });
    expect(second.historyState()?.scan).toBeUndefined();
  });

  it('a full scan that fails half-way goes on from its next page at the next read, and a stop keeps that for the next process', async () => {
    const s = await sim({ size: SIZE, connectorPeriodSeconds: 86_400 });
    const stack = simStack(s, { paging: { connectorPageSize: 100 } });
    const whole = (await makeClient(stack).client.readConnectors()).runs;
    s.clearRequests();
    s.addFault({ endpoint: 'connector', query: 'page=3&size=100&sort=_time%2Cdesc', status: 400, times: 1 });
    const client = makeClient(stack).client;
    await expect(client.readConnectors()).rejects.toThrow(/400/);
    // What a shutdown in the middle of the scan writes: its pages so far and the next one.
    expect((json(client.historyState()) as { scan?: unknown }).scan).toMatchObject({ page: 3, size: 100, pagesRead: 3 });
    s.clearRequests();
    const read = await client.readConnectors();
    expect(new URLSearchParams(requestsTo(s, 'connector')[0]?.rawQuery).get('page')).toBe('3');
    expect(collected(read.runs)).toEqual(collected(whole.map(runForDisk)));
  });

  it('keeps nothing of it under another time zone, another version, or a broken state', async () => {
    const s = await sim({ size: SIZE, connectorPeriodSeconds: 86_400 });
    const stack = simStack(s);
    const client = makeClient(stack).client;
    await client.readConnectors();
    const state = json(client.historyState()) as Record<string, unknown>;
    expect(ConnectorHistoryReader.fromState(historySettingsOf({ ...stack, timezone: 'Europe/Berlin' }), state)).toBeUndefined();
    expect(ConnectorHistoryReader.fromState(historySettingsOf(stack), { ...state, v: 2 })).toBeUndefined();
    expect(ConnectorHistoryReader.fromState(historySettingsOf(stack), { ...state, runs: 'x' })).toBeUndefined();
    expect(ConnectorHistoryReader.fromState(historySettingsOf(stack), state)).toBeDefined();
  });

  it('a state whose last full scan is older than connectorFullScanInterval is continued with a full scan', async () => {
    const s = await sim({ size: SIZE, connectorPeriodSeconds: 86_400 });
    const stack = simStack(s, { paging: { connectorPageSize: 100 } });
    const client = makeClient(stack).client;
    await client.readConnectors();
    const state = json(client.historyState()) as Record<string, number>;
    const old = { ...state, lastFullScanAt: (state.lastFullScanAt ?? 0) - stack.connectorFullScanInterval - 1 };
    const next = makeClient(stack, { history: ConnectorHistoryReader.fromState(historySettingsOf(stack), old) }).client;
    s.clearRequests();
    await next.readConnectors();
    expect(new URLSearchParams(requestsTo(s, 'connector')[0]?.rawQuery).get('size')).toBe('100');
  });

  it('rows kept on disk map to the very samples the rows read make', async () => {
    const s = await sim({ size: { connectors: 40, profilesPerConnector: 3, runsPerConnector: 3 } });
    const rows = (await makeClient(simStack(s)).client.readConnectors()).runs;
    expect(rows.some((r) => r.event_messages != null && r.event_messages.length > 0)).toBe(true);
    expect(collected(rows.map(runForDisk))).toEqual(collected(rows));
    const odd: ConnectorRun[] = [
      { bridge_name: 'a', event_messages: 'one text' },
      { bridge_name: 'b', event_messages: '  ' },
      { bridge_name: 'c', event_messages: [null, 'x', 3, ['y'], { ERROR: 'secret', INFO: 'z' }] },
    ];
    expect(collected(odd.map(runForDisk))).toEqual(collected(odd));
  });
});

describe("the client's state across a restart", () => {
  it('keeps the spellings that answered and the plan, never a token', async () => {
    const s = await sim();
    const { client, cmdb, plan } = makeClient(simStack(s), { enabled: ['actions'] });
    await client.get('actions');
    const state = json(cmdb.exportState(plan?.seen() ?? {}));
    for (const token of s.issuedTokens()) expect(JSON.stringify(state)).not.toContain(token);
    const read = clientStateFrom(state);
    expect(read?.spellings.get('actions')).toBe('/CMDB/v2/system/metrics/actions');
    expect(read?.seen.actions).toBeGreaterThan(0);
    // A spelling the endpoint no longer has is dropped; another version is no state.
    const edited = { ...(state as Record<string, unknown>), spellings: [['actions', '/elsewhere']] };
    expect(clientStateFrom(edited)?.spellings.size).toBe(0);
    expect(clientStateFrom({ ...(state as Record<string, unknown>), v: 9 })).toBeUndefined();
  });
});

describe('pauses across a restart', () => {
  it('a pause still running is kept and waited out, with its scope and status; one that has ended is not', async () => {
    const s = await sim();
    // An hour from now: still running when it is read back, however slow the machine.
    const until = Math.round(Date.now() / 1000) + 3600;
    const pause = { scope: 'stack', until: until * 1000, status: 429, endpoint: 'actions', request: 'GET /CMDB/v2/system/metrics/actions' } as const;
    const group = { scope: 'group', group: 'license', until: until * 1000, status: 503, endpoint: 'license', request: 'GET /CMDB/v2/license' } as const;
    const { cmdb, metrics } = makeClient(simStack(s));
    cmdb.restorePauses([pause, group]);
    expect(cmdb.rateLimitPausedUntil()).toBeCloseTo(until, 0);
    const kept = clientStateFrom(json(cmdb.exportState({})));
    expect(kept?.pauses).toEqual([pause, group]);
    expect(await metrics.value('cmdb_rate_limit_paused_until_timestamp_seconds', { stack: 'test' })).toBe(until);
    const other = makeClient(simStack(s)).cmdb;
    other.restorePauses([{ ...pause, until: (until - 3660) * 1000 }]);
    expect(other.rateLimitPausedUntil()).toBeUndefined();
    expect(other.pauses()).toEqual([]);
  });
});

describe("the budget's sends across a restart", () => {
  const NOW = 1_800_000_000_000;

  it('counts the sends of the last window: no window holds more than the rate', () => {
    // 10 a minute: 8 sent in the 30 s before the restart, one 70 s before (gone from the window).
    const sends = [NOW - 70_000, ...Array.from({ length: 8 }, (_, i) => NOW - 30_000 + i * 1000)];
    const budget = new RequestBudget(10, NOW, budgetFromSends(sends, NOW));
    const times = [...sends.slice(1), ...Array.from({ length: 10 }, () => budget.take(NOW).at)];
    for (const [i, at] of times.entries()) {
      const inWindow = times.filter((t) => t > at - WINDOW_MS && t <= at).length;
      expect(inWindow, `at send ${i}`).toBeLessThanOrEqual(10);
    }
    // The third request after the restart already waits for the first of the old ones to leave the window.
    expect(times[10]).toBe((sends[1] as number) + WINDOW_MS);
  });

  it('assumes a whole minute spent when the record was lost: the first request waits a window', () => {
    const budget = new RequestBudget(10, NOW, spentBudget(10, NOW));
    expect(budget.take(NOW).at).toBe(NOW + WINDOW_MS);
  });

  it('tells every request as it leaves (the record a restart reads), at the times the budget counts', async () => {
    const s = await sim();
    const { client, cmdb } = makeClient(simStack(s));
    const told: number[] = [];
    cmdb.events.sends.on((e) => told.push(e.sentAt));
    await client.get('license');
    await client.get('actions');
    expect(told).toHaveLength(s.requests().length);
    expect([...cmdb.budgetState().sendTimes]).toEqual([...told].sort((a, b) => a - b));
  });
});
