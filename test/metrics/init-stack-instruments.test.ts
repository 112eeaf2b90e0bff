/**
 * initStackInstruments: a new runtime's state gauges start at 0; a stack reconfigured in place (a
 * reload that keeps its road) keeps what its gauges say, and only an endpoint just enabled gets its
 * series started.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createInstruments, initStackInstruments } from '../../src/metrics/instruments.js';

const GAUGES = ['cmdb_rate_limit_paused_until_timestamp_seconds', 'cmdb_action_jobs_backlog', 'cmdb_connector_scan_in_progress', 'cmdb_connector_incremental_off_until_timestamp_seconds'];

async function gauges(instruments: ReturnType<typeof createInstruments>, stack: string): Promise<Record<string, number | undefined>> {
  const families = await (instruments.registries.stack(stack) as Registry).getMetricsAsJSON();
  return Object.fromEntries(GAUGES.map((name) => [name, families.find((f) => f.name === name)?.values.find((v) => v.labels.stack === stack)?.value]));
}

function running() {
  const instruments = createInstruments(new Registry(), { defaultMetrics: false });
  initStackInstruments(instruments, 's', ['connectors', 'actions'], ['connector', 'action_jobs']);
  instruments.rateLimitPausedUntil.set({ stack: 's' }, 1_800_000_060);
  instruments.actionJobsBacklog.set({ stack: 's' }, 5);
  instruments.connectorScanInProgress.set({ stack: 's' }, 1);
  instruments.connectorIncrementalOffUntil.set({ stack: 's' }, 1_800_000_600);
  return instruments;
}

describe('initStackInstruments', () => {
  it('starts a new runtime at 0: the counters and every state gauge', async () => {
    const instruments = running();
    initStackInstruments(instruments, 's', ['connectors', 'actions'], ['connector', 'action_jobs']);
    expect(await gauges(instruments, 's')).toEqual(Object.fromEntries(GAUGES.map((g) => [g, 0])));
    const text = await (instruments.registries.stack('s') as Registry).metrics();
    expect(text).toContain('cmdb_connector_scans_total{stack="s",kind="full"} 0');
  });

  it('keeps what the gauges of a stack reconfigured in place say', async () => {
    const instruments = running();
    initStackInstruments(instruments, 's', ['connectors', 'actions'], ['connector', 'action_jobs'], true);
    expect(await gauges(instruments, 's')).toEqual({
      cmdb_rate_limit_paused_until_timestamp_seconds: 1_800_000_060,
      cmdb_action_jobs_backlog: 5,
      cmdb_connector_scan_in_progress: 1,
      cmdb_connector_incremental_off_until_timestamp_seconds: 1_800_000_600,
    });
  });

  it('starts at 0 the gauges of an endpoint a reconfiguration enables', async () => {
    const instruments = createInstruments(new Registry(), { defaultMetrics: false });
    initStackInstruments(instruments, 's', ['actions'], ['action_jobs']);
    instruments.actionJobsBacklog.set({ stack: 's' }, 3);
    expect((await gauges(instruments, 's')).cmdb_connector_scan_in_progress).toBeUndefined();
    initStackInstruments(instruments, 's', ['connectors', 'actions'], ['connector', 'action_jobs'], true);
    expect(await gauges(instruments, 's')).toMatchObject({ cmdb_connector_scan_in_progress: 0, cmdb_connector_incremental_off_until_timestamp_seconds: 0, cmdb_action_jobs_backlog: 3 });
  });
});
