/** Everything one simulator instance holds, shared by the CMDB and admin request handlers. */
import type { DataEndpoint } from '../api/endpoints.js';
import { ConfigError } from '../errors.js';
import type { Compression, ConnectorPace, ScenarioControls } from './api.js';
import type { RateLimiter, TokenStore } from './access.js';
import type { Dataset } from './data/dataset.js';
import type { FaultBook } from './faults.js';
import type { RequestLog } from './request-log.js';
import type { Timeline } from './timeline.js';
import { profileName } from './data/connector-history.js';
import { runningRun } from './data/ingestion.js';
import { isoUtc } from './format.js';

export interface Core {
  readonly data: Dataset;
  readonly timeline: Timeline;
  readonly scenario: ScenarioControls;
  readonly tokens: TokenStore;
  readonly limiter: RateLimiter;
  readonly faults: FaultBook;
  forbidden: ReadonlySet<DataEndpoint>;
  readonly log: RequestLog;
  readonly clientId: string;
  readonly secret: string;
  readonly connectorPageSize: number;
  readonly actionPageSize: number;
  readonly ignoreSort: boolean;
  readonly compression: Compression;
  connectorPace: ConnectorPace;
  /** Next connector to write a run for when a page is read (connectorPace.insertsPerPage). */
  insertCursor: number;
  readonly live: boolean;
  /** Latency timers still pending, cleared on close. */
  readonly timers: Set<NodeJS.Timeout>;
}

/** What exists right now: for tests, the demo and `GET /_admin/state`. */
export function stateSummary(core: Core) {
  const { data } = core;
  const profiles = new Map<string, Set<string>>();
  for (const row of data.history.all()) {
    const set = profiles.get(row.bridge_name) ?? new Set<string>();
    set.add(profileName(row));
    profiles.set(row.bridge_name, set);
  }
  return {
    seed: data.seed,
    size: data.size,
    now: isoUtc(core.timeline.now()),
    live: core.live,
    clientId: core.clientId,
    counts: {
      connectors: data.connectors.size,
      connectorRuns: data.history.size,
      actions: data.actions.size,
      actionJobs: [...data.actions.values()].reduce((n, a) => n + a.jobs.length, 0),
      ingestionRuns: data.ingestion.runs.length,
      requests: core.log.list().length,
    },
    connectors: [...data.connectors.values()].map((c) => ({
      bridgeName: c.bridgeName,
      profiles: [...(profiles.get(c.bridgeName) ?? [])],
      usualStatus: c.usualStatus,
    })),
    actionIds: [...data.actions.keys()],
    ingestionRunIds: data.ingestion.runs.map((r) => r.id),
    runningIngestionRunId: runningRun(data.ingestion)?.id ?? null,
    trackedAssets: [...data.changes.assets.names],
    trackedUsers: [...data.changes.users.names],
    licenseExpiry: data.license.expireDate,
    assetCount: data.inventory.assetCount,
    userCount: data.inventory.userCount,
    faults: core.faults.list(),
    tokenExpiry: core.tokens.currentExpiry() ?? null,
    rateLimit: core.limiter.current() ?? null,
    forbidden: [...core.forbidden],
    connectorPace: core.connectorPace,
    /** The data query's records: how many, and when the mergers last rebuilt each table. */
    records: {
      asset: { count: data.records.asset.records().length, rebuiltAt: isoUtc(data.records.asset.rebuiltAtMs) },
      user: { count: data.records.user.records().length, rebuiltAt: isoUtc(data.records.user.rebuiltAtMs) },
    },
  };
}

export type SimulatorState = ReturnType<typeof stateSummary>;

/** A connector pace with every number finite and at least 0 (ms at most 10 minutes a row). */
export function checkConnectorPace(pace: ConnectorPace | undefined): ConnectorPace {
  const out: ConnectorPace = {};
  for (const key of ['msPerRow', 'baseMs', 'insertsPerPage', 'holdAboveRows'] as const) {
    const v = pace?.[key];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 600_000) {
      throw new ConfigError([{ path: `connectorPace.${key}`, message: 'must be a number from 0 to 600000' }]);
    }
    out[key] = v;
  }
  return out;
}
