/**
 * The saved queries of one stack through StackPoller (a scripted query reader, a real store):
 * a query that does not fit the field metadata is refused with the query and the criterion named,
 * logged once, and nothing but its status is exported for it; the other queries go on; a failed
 * count leaves no count behind; the rebuild time a count belongs to comes from the merger rows.
 */
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import type { CmdbApi, QueryCounting } from '../../src/api/endpoints.js';
import type { SavedQuery } from '../../src/api/query.js';
import type { ConnectorRun } from '../../src/api/schemas.js';
import { CmdbAbortedError, CmdbHttpError } from '../../src/errors.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { enabledEndpoints, pollSettings } from '../../src/config/endpoints.js';
import { StackPoller } from '../../src/scheduler/stack-poller.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { captureLogger } from '../helpers/log.js';
import type { StackConfig } from '../../src/config/types.js';
import { testStack } from '../helpers/stack.js';

const FIELDS = [
  { fieldName: 'Asset_Type', dataType: 'String' },
  { fieldName: 'EP_Not_Installed', dataType: 'Binary' },
  { fieldName: 'High_CVE', dataType: 'Integer' },
  { fieldName: 'Last_Discovered_Datetime', dataType: 'Datetime' },
];

const q = (name: string, searchFieldName: string, operator: string, value: unknown, type?: string): SavedQuery =>
  ({ name, table: 'asset', query: [[{ searchFieldName, operator, value, ...(type ? { type } : {}) }]] }) as SavedQuery;

const GOOD = q('edr-missing', 'EP_Not_Installed', '==', 'True');
const REFUSED: SavedQuery[] = [
  q('quoted-number', 'High_CVE', '==', '5'),
  q('unknown-field', 'EP_Not_Instaled', '==', 'True'),
  q('wrong-type', 'EP_Not_Installed', '==', 'True', 'String'),
  q('windowed', 'Last_Discovered_Datetime', 'within past', '30 days'),
];

function merger(time: number, status = 'Success'): ConnectorRun {
  return { bridge_name: 'Lucidum Asset Merger', platform: 'ML-ENGINE', profile: null, status, _time: time } as ConnectorRun;
}

function setup(queries: SavedQuery[], overrides: Partial<StackConfig> = {}) {
  const stack = testStack({ name: 's', queries, track: { assets: [], users: [] }, ...overrides });
  const log = captureLogger();
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger });
  store.addStack('s', new Map(enabledEndpoints(stack).map((e) => [e, { intervalSeconds: 3600, staleAfterSeconds: 10_800 }] as const)), 1000);
  const clock = { t: 1_780_000_000 };
  const state = { runs: [merger(1_779_990_000)], count: 7, countError: undefined as Error | undefined, failNextCounts: 0, retriesPerCount: 0, metadataError: undefined as Error | undefined, metadataUntilAborted: false, onCount: undefined as (() => Promise<void>) | undefined };
  const sent: Array<{ endpoint: string; query?: unknown }> = [];
  const reader: QueryCounting = {
    fields: async (table, ctx) => {
      sent.push({ endpoint: 'data_metadata', query: table });
      // As the client does while Retry-After pauses and retries take the poll to its deadline: aborted there.
      if (state.metadataUntilAborted && ctx?.signal) {
        const { signal } = ctx;
        await new Promise((resolve) => (signal.aborted ? resolve(undefined) : signal.addEventListener('abort', resolve, { once: true })));
        throw new CmdbAbortedError(`GET /CMDB/v2/data/metadata/${table}`);
      }
      if (state.metadataError) throw state.metadataError;
      return FIELDS;
    },
    count: async (_table, query, ctx) => {
      sent.push({ endpoint: 'data_query', query });
      await state.onCount?.();
      // The client's retries of a failing count, each after the caller's pace.
      for (let i = 0; i < state.retriesPerCount; i++) {
        await ctx?.beforeRetry?.();
        sent.push({ endpoint: 'data_query', query });
      }
      if (state.countError) throw state.countError;
      if (state.failNextCounts > 0) {
        state.failNextCounts--;
        throw new CmdbHttpError('POST /CMDB/v2/data/cmdb', 503, 'Service Unavailable');
      }
      return state.count;
    },
  };
  const api: CmdbApi = {
    get: (async (endpoint: string) => (endpoint === 'connector' ? state.runs : undefined)) as CmdbApi['get'],
    queries: reader,
  };
  const sleep = async (ms: number) => void (clock.t += ms / 1000);
  const poller = new StackPoller({ stack, settings: pollSettings(stack), api, store, logger: log.logger, scrubber: log.scrubber, now: () => clock.t, sleep });
  const samples = (name: string) => (store.snapshot('s', 'data_query')?.samples ?? []).filter((x) => x.name === name);
  const value = (name: string, query: string) => samples(name).find((x) => x.labels.query === query)?.value;
  const counts = () => sent.filter((r) => r.endpoint === 'data_query');
  /** Two hours on, the mergers rebuild the data to `count` records a query; the connector history and the queries are polled. */
  const rebuild = async (count: number) => {
    clock.t += 7200;
    state.runs = [merger(clock.t - 60)];
    state.count = count;
    await poller.poll('connectors');
    await poller.poll('queries');
    await store.settled();
  };
  return { poller, store, clock, state, sent, counts, value, samples, log, rebuild };
}

describe('saved queries that do not fit the field metadata', () => {
  it.each(REFUSED.map((r) => [r.name, r]))('%s: refused with the query and the criterion named, not sent, no count exported', async (_name, refused) => {
    const s = setup([GOOD, refused]);
    await s.poller.poll('connectors');
    await s.store.settled();
    await s.poller.poll('queries');
    await s.store.settled();
    // Only the good query was counted.
    expect(s.counts()).toHaveLength(1);
    expect(s.value('cmdb_query_records', 'edr-missing')).toBe(7);
    expect(s.value('cmdb_query_records', refused.name)).toBeUndefined();
    expect(s.value('cmdb_query_data_as_of_timestamp_seconds', refused.name)).toBeUndefined();
    expect(s.value('cmdb_query_refused', refused.name)).toBe(1);
    expect(s.value('cmdb_query_last_run_success', refused.name)).toBe(0);
    const status = s.poller.queryStatus().find((x) => x.name === refused.name);
    expect(status?.state).toBe('refused');
    expect(status?.reason).toContain(`query "${refused.name}"`);
    expect(status?.reason).toContain(`criterion [0][0] (${refused.query[0]?.[0]?.searchFieldName} ${refused.query[0]?.[0]?.operator})`);
  });

  it('names what is wrong: the quoted number, the near field, the field\'s own type, the absolute form', async () => {
    const s = setup([GOOD, ...REFUSED]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    const reason = (name: string) => s.poller.queryStatus().find((x) => x.name === name)?.reason ?? '';
    expect(reason('quoted-number')).toMatch(/"5" is a quoted number.*write 5 without quotes/);
    expect(reason('unknown-field')).toMatch(/no field "EP_Not_Instaled".*did you mean "EP_Not_Installed"\?/);
    expect(reason('wrong-type')).toMatch(/type "String" is not the field's: EP_Not_Installed is Binary/);
    expect(reason('windowed')).toMatch(/operator "within past" is refused.*operator ">=" with a relative value such as "-30d"/);
  });

  it('logs each refusal once, not at every rebuild', async () => {
    const s = setup([GOOD, REFUSED[0] as SavedQuery]);
    for (let i = 0; i < 3; i++) {
      s.state.runs = [merger(1_779_990_000 + i * 86_400)];
      s.clock.t += 86_400;
      await s.poller.poll('connectors');
      await s.poller.poll('queries');
    }
    const refusals = s.log.lines().filter((l) => String(l.msg).startsWith('saved query refused'));
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({ query: 'quoted-number', endpoint: 'data_query' });
    expect(s.counts()).toHaveLength(3);
  });
});

describe('saved queries over rebuilds', () => {
  it('count once per rebuild, at most every intervals.queries, and send nothing between', async () => {
    const s = setup([GOOD]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    expect(s.counts()).toHaveLength(1);
    expect(s.value('cmdb_query_data_as_of_timestamp_seconds', 'edr-missing')).toBe(1_779_990_000);
    for (let i = 0; i < 5; i++) {
      s.clock.t += 600;
      await s.poller.poll('connectors');
      await s.poller.poll('queries');
    }
    expect(s.counts(), 'no rebuild: nothing sent').toHaveLength(1);
    // A rebuild within intervals.queries (1h) of the last run waits for it to pass.
    s.state.runs = [merger(s.clock.t - 60)];
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    expect(s.counts()).toHaveLength(1);
    s.clock.t += 3600;
    s.state.count = 9;
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(2);
    expect(s.value('cmdb_query_records', 'edr-missing')).toBe(9);
    expect(s.value('cmdb_query_data_as_of_timestamp_seconds', 'edr-missing')).toBe(s.state.runs[0]?._time);
    // The metadata is read again with the rebuild, once.
    expect(s.sent.filter((r) => r.endpoint === 'data_metadata')).toHaveLength(2);
  });

  it('keep the count of the rebuild before, for the change across rebuilds; a daily run of the same rebuild keeps it', async () => {
    const s = setup([{ ...GOOD, alertRiseRatio: 0.2 }]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.value('cmdb_query_previous_records', 'edr-missing')).toBeUndefined();
    expect(s.value('cmdb_query_alert_rise_ratio', 'edr-missing')).toBe(0.2);
    await s.rebuild(12);
    expect([s.value('cmdb_query_records', 'edr-missing'), s.value('cmdb_query_previous_records', 'edr-missing')]).toEqual([12, 7]);
    // A day later without a rebuild: counted again (the daily run), the count before stays that of the rebuild before.
    s.clock.t += 86_400;
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(3);
    expect([s.value('cmdb_query_records', 'edr-missing'), s.value('cmdb_query_previous_records', 'edr-missing')]).toEqual([12, 7]);
  });

  it('a failed merger run is no rebuild', async () => {
    const s = setup([GOOD]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    s.clock.t += 7200;
    s.state.runs = [merger(s.clock.t - 60, 'Warning&Error')];
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    expect(s.counts()).toHaveLength(1);
  });

  it('a failed count leaves no count behind, and is asked again at the next poll', async () => {
    const s = setup([GOOD]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.value('cmdb_query_records', 'edr-missing')).toBe(7);
    s.clock.t += 7200;
    s.state.runs = [merger(s.clock.t - 60)];
    s.state.countError = new CmdbHttpError('POST /CMDB/v2/data/cmdb', 503, 'Service Unavailable');
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.value('cmdb_query_records', 'edr-missing')).toBeUndefined();
    expect(s.value('cmdb_query_last_run_success', 'edr-missing')).toBe(0);
    expect(s.store.snapshot('s', 'data_query')?.up).toBe(0);
    expect(s.poller.failing('queries')).toBe(true);
    s.state.countError = undefined;
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.value('cmdb_query_records', 'edr-missing')).toBe(7);
    expect(s.counts()).toHaveLength(3);
  });

  it('a query that fails costs only itself: the others are counted, the endpoint reads down for the round', async () => {
    const other = q('servers', 'Asset_Type', '==', 'Server');
    const s = setup([GOOD, other]);
    // The first count of the round fails, the second answers.
    s.state.failNextCounts = 1;
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.value('cmdb_query_records', 'edr-missing')).toBeUndefined();
    expect(s.value('cmdb_query_records', 'servers')).toBe(7);
    expect(s.store.snapshot('s', 'data_query')?.up).toBe(0);
    expect(s.poller.queryStatus().find((x) => x.name === 'edr-missing')).toMatchObject({ state: 'failed', next: 'retry', reason: expect.stringContaining('503') });
  });

  it('are not sent while their table\'s metadata was never read: data_metadata reads down, data_query does not (no query was sent)', async () => {
    const s = setup([GOOD]);
    s.state.metadataError = new CmdbHttpError('GET /CMDB/v2/data/metadata/asset', 503, 'Service Unavailable');
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(0);
    expect(s.store.snapshot('s', 'data_metadata')?.up).toBe(0);
    // Before (issue 37): data_query read 0 (blocked) though no data query was sent, so its alert fired for a metadata outage.
    expect(s.store.snapshot('s', 'data_query')?.up).toBe(1);
    expect(s.poller.runner.status().find((x) => x.endpoint === 'data_metadata')?.state).toBe('failing');
    expect(s.value('cmdb_query_records', 'edr-missing')).toBeUndefined();
    expect(s.value('cmdb_query_last_run_success', 'edr-missing')).toBe(0);
    expect(s.poller.queryStatus()[0]).toMatchObject({ state: 'failed', next: 'retry', reason: expect.stringMatching(/field metadata of table asset could not be read: .*503/) });
    expect(s.poller.failing('queries')).toBe(true);
    s.state.metadataError = undefined;
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(1);
    expect(s.store.snapshot('s', 'data_query')?.up).toBe(1);
    expect(s.value('cmdb_query_records', 'edr-missing')).toBe(7);
  });

  it('a metadata read cut off at the poll\'s deadline fails data_metadata only: data_query, which sent nothing, is published up', async () => {
    // Seen in the fault matrix (data_metadata × status-429-short): Retry-After pauses took the metadata
    // read to the end of the interval, and data_query, published after it, failed as "timeout" and
    // stayed down for the whole outage (a failing data_query is not published while the metadata fails).
    const s = setup([GOOD], { intervals: { ...testStack().intervals, queries: 0.05 } });
    await s.poller.poll('connectors');
    s.state.metadataUntilAborted = true;
    for (let round = 0; round < 2; round++) {
      await s.poller.poll('queries');
      await s.store.settled();
      expect(s.poller.runner.status().find((x) => x.endpoint === 'data_metadata')).toMatchObject({ state: 'failing', outcome: 'timeout' });
      expect(s.poller.runner.status().find((x) => x.endpoint === 'data_query')?.state).not.toBe('failing');
      expect(s.store.snapshot('s', 'data_query')?.up).toBe(1);
      expect(s.value('cmdb_query_last_run_success', 'edr-missing')).toBe(0);
    }
    expect(s.counts()).toHaveLength(0);
  });

  it('a data_query that failed stays down while the metadata fails too: no poll of it succeeded', async () => {
    const s = setup([GOOD]);
    await s.poller.poll('connectors');
    s.state.countError = new CmdbHttpError('POST /CMDB/v2/data/cmdb', 503, 'Service Unavailable');
    await s.poller.poll('queries');
    s.clock.t += 7200;
    s.state.runs = [merger(s.clock.t - 60)];
    s.state.metadataError = new CmdbHttpError('GET /CMDB/v2/data/metadata/asset', 503, 'Service Unavailable');
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(1);
    expect(s.store.snapshot('s', 'data_query')?.up).toBe(0);
  });

  it('metadata of an earlier rebuild never clears a query: while it cannot be read again, no count, last_run_success 0, nothing sent', async () => {
    // Issue 37: a field gone from the stack counted 0 (10 before) with last_run_success 1, until the next rebuild.
    const s = setup([GOOD]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.value('cmdb_query_records', 'edr-missing')).toBe(7);
    s.clock.t += 7200;
    s.state.runs = [merger(s.clock.t - 60)];
    s.state.count = 0;
    s.state.metadataError = new CmdbHttpError('GET /CMDB/v2/data/metadata/asset', 503, 'Service Unavailable');
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts(), 'not sent against the metadata of the rebuild before').toHaveLength(1);
    expect(s.value('cmdb_query_records', 'edr-missing')).toBeUndefined();
    expect(s.value('cmdb_query_last_run_success', 'edr-missing')).toBe(0);
    expect(s.poller.queryStatus()[0]).toMatchObject({
      state: 'failed',
      next: 'retry',
      reason: expect.stringMatching(/could not be read again since the rebuild of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(.*503.*\); the query is not counted against the metadata read before/),
    });
    expect(s.store.snapshot('s', 'data_metadata')?.up).toBe(0);
    expect(s.store.snapshot('s', 'data_query')?.up).toBe(1);
    // Read again: checked against it, and counted.
    s.state.metadataError = undefined;
    s.state.count = 11;
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(2);
    expect(s.value('cmdb_query_records', 'edr-missing')).toBe(11);
    expect(s.value('cmdb_query_last_run_success', 'edr-missing')).toBe(1);
  });

  it('a rebuild noted while a round runs: the queries after it wait for its metadata, never counted against the one before', async () => {
    const s = setup([GOOD, q('servers', 'Asset_Type', '==', 'Server')]);
    await s.poller.poll('connectors');
    // During the first count, a connector poll sees a new rebuild.
    s.state.onCount = async () => {
      s.state.onCount = undefined;
      s.state.runs = [merger(s.clock.t + 1)];
      await s.poller.poll('connectors');
    };
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(1);
    expect(s.poller.queryStatus().find((x) => x.name === 'servers')).toMatchObject({ state: 'failed', next: 'retry', reason: expect.stringMatching(/is not read yet for the rebuild of /) });
    expect(s.value('cmdb_query_records', 'servers')).toBeUndefined();
    // The next poll reads the metadata of that rebuild and counts both.
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.sent.filter((r) => r.endpoint === 'data_metadata')).toHaveLength(2);
    expect(s.value('cmdb_query_records', 'servers')).toBe(7);
  });

  it('every request of a count takes a slot of the queries\' pacer, its retries included (issue 37: 48 requests in 49 s at 20 a minute)', async () => {
    const s = setup([GOOD, q('servers', 'Asset_Type', '==', 'Server')], { queriesPerMinute: 20 });
    await s.poller.poll('connectors');
    s.state.countError = new CmdbHttpError('POST /CMDB/v2/data/cmdb', 503, 'Service Unavailable');
    s.state.retriesPerCount = 3;
    const start = s.clock.t;
    await s.poller.poll('queries');
    // Two counts of four requests each: eight slots 3 s apart, the first at once.
    expect(s.counts()).toHaveLength(8);
    expect(s.clock.t - start).toBe(7 * 3);
  });

  it('wait at start for the first read of the connector history, which dates the rebuild', async () => {
    const s = setup([GOOD]);
    await s.poller.poll('queries');
    expect(s.sent).toHaveLength(0);
    expect(s.poller.queryStatus()[0]).toMatchObject({ state: 'pending', next: 'waiting' });
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    expect(s.counts()).toHaveLength(1);
  });
});

describe('saved queries across a reload that keeps the stack\'s road (StackPoller.reconfigure)', () => {
  it('keep the count, its rebuild, the count before and a refusal of every query left as it was: nothing is asked again', async () => {
    const refused = REFUSED[0] as SavedQuery;
    const s = setup([{ ...GOOD, alertRiseRatio: 0.2 }, refused]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.rebuild(12);
    const before = s.poller.queryStatus();
    // Another interval, another pace, the same queries.
    const next = { ...s.poller.stack, intervals: { ...s.poller.stack.intervals, inventory: 600 }, queriesPerMinute: 5 };
    s.poller.reconfigure(next, pollSettings(next));
    s.clock.t += 600;
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts(), 'no count asked again').toHaveLength(2);
    expect(s.poller.queryStatus()).toEqual(before);
    expect([s.value('cmdb_query_records', 'edr-missing'), s.value('cmdb_query_previous_records', 'edr-missing')]).toEqual([12, 7]);
    expect(s.value('cmdb_query_refused', refused.name)).toBe(1);
    expect(s.log.lines().filter((l) => String(l.msg).startsWith('saved query refused')), 'the refusal is not logged again').toHaveLength(1);
  });

  it('count a query whose query changed as new, drop the series of a query that went, and take a new alertRiseRatio', async () => {
    const other = q('servers', 'Asset_Type', '==', 'Server');
    const s = setup([{ ...GOOD, alertRiseRatio: 0.2 }, other, REFUSED[0] as SavedQuery]);
    await s.poller.poll('connectors');
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(2);
    // The refused query fixed, servers gone, the ratio of edr-missing changed.
    const fixed = q('quoted-number', 'High_CVE', '==', 5);
    const next = { ...s.poller.stack, queries: [{ ...GOOD, alertRiseRatio: 0.5 }, fixed] };
    s.poller.reconfigure(next, pollSettings(next));
    s.clock.t += 60;
    await s.poller.poll('queries');
    await s.store.settled();
    const fieldOf = (query: unknown) => (query as Array<Array<{ searchFieldName: string }>>)[0]?.[0]?.searchFieldName;
    expect(s.counts().map((c) => fieldOf(c.query)), 'only the changed query is counted').toEqual(['EP_Not_Installed', 'Asset_Type', 'High_CVE']);
    expect(s.value('cmdb_query_records', 'quoted-number')).toBe(7);
    expect(s.value('cmdb_query_refused', 'quoted-number')).toBe(0);
    expect(s.samples('cmdb_query_records').map((x) => x.labels.query).sort()).toEqual(['edr-missing', 'quoted-number']);
    expect(s.value('cmdb_query_alert_rise_ratio', 'edr-missing')).toBe(0.5);
    // A reload that only drops a query republishes at the next poll, though nothing is due.
    const dropped = { ...s.poller.stack, queries: [{ ...GOOD, alertRiseRatio: 0.5 }] };
    s.poller.reconfigure(dropped, pollSettings(dropped));
    await s.poller.poll('queries');
    await s.store.settled();
    expect(s.counts()).toHaveLength(3);
    expect(s.samples('cmdb_query_records').map((x) => x.labels.query)).toEqual(['edr-missing']);
  });
});
