/** Builds the whole simulated CMDB from a seed, a size and the clock at start. */
import { DEFAULT_SIZE, type SimulatorSize } from '../api.js';
import { ConfigError, type ConfigIssue } from '../../errors.js';
import { Rng } from '../random.js';
import { generatedAction } from './actions.js';
import { ChangeLog, trackedAssetNames, trackedUserNames } from './changes.js';
import { ConnectorHistory } from './connector-history.js';
import { cycleRows, generatedConnectorSpec } from './connectors.js';
import { initialIngestion } from './ingestion.js';
import { initialInventory, initialLicense } from './inventory.js';
import { initialRecords, mergerNames, noteMergerRuns, type Records } from './records.js';
import type { ActionState, ConnectorRow, ConnectorSpec, IngestionState, Inventory, LicenseRow } from './types.js';

/** Far beyond any test or benchmark; keeps a typo from eating the machine's memory. */
const MAX_KNOB = 1_000_000;
/** Knobs that must be at least 1 for the data to make sense (a connector has a profile and a run). */
const AT_LEAST_ONE: ReadonlySet<keyof SimulatorSize> = new Set(['profilesPerConnector', 'runsPerConnector', 'tasksPerRun']);

export function resolveSize(partial: Partial<SimulatorSize> = {}): SimulatorSize {
  const size = { ...DEFAULT_SIZE, ...partial };
  const issues: ConfigIssue[] = [];
  for (const key of Object.keys(DEFAULT_SIZE) as Array<keyof SimulatorSize>) {
    const v = size[key];
    const min = AT_LEAST_ONE.has(key) ? 1 : 0;
    if (!Number.isInteger(v) || v < min || v > MAX_KNOB) {
      issues.push({ path: `size.${key}`, message: `must be an integer from ${min} to ${MAX_KNOB}, got ${String(v)}` });
    }
  }
  for (const key of Object.keys(partial)) {
    if (!(key in DEFAULT_SIZE)) issues.push({ path: `size.${key}`, message: 'unknown size knob' });
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return size;
}

function connectorHistory(seed: number, specs: readonly ConnectorSpec[], size: SimulatorSize): ConnectorHistory {
  const rows: ConnectorRow[] = [];
  for (const spec of specs) {
    for (let k = 1; k <= size.runsPerConnector; k++) {
      const due = spec.nextRunMs - k * spec.periodMs;
      rows.push(...cycleRows(seed, spec, due, k === 1 ? { exactly: spec.usualStatus } : 'incidental'));
    }
  }
  // Served in no particular order: a connector's newest run may sit on a later page than its older ones.
  new Rng(seed).shuffle(rows);
  const history = new ConnectorHistory(size.runsPerConnector);
  history.load(rows);
  return history;
}

/**
 * `historyDays`: the past Action jobs and ingestion runs are spread over that many days before now
 * (as a backfill reads them), instead of the last minutes on their own cadence.
 */
export function buildDataset(seed: number, size: SimulatorSize, nowMs: number, connectorPeriodS?: number, historyDays?: number): Dataset {
  const historyMs = historyDays === undefined ? undefined : historyDays * 86_400_000;
  const specs: ConnectorSpec[] = [];
  for (let i = 0; i < size.connectors; i++) specs.push(generatedConnectorSpec(seed, i, size.profilesPerConnector, nowMs, connectorPeriodS));
  const actions = new Map<string, ActionState>();
  for (let i = 0; i < size.actions; i++) {
    const action = generatedAction(seed, i, size.jobsPerAction, nowMs, historyMs);
    actions.set(action.key, action);
  }
  const inventory = initialInventory(seed);
  const history = connectorHistory(seed, specs, size);
  return {
    seed,
    size,
    ...(connectorPeriodS === undefined ? {} : { connectorPeriodS }),
    startMs: nowMs,
    connectors: new Map(specs.map((s) => [s.bridgeName, s])),
    history,
    ingestion: initialIngestion(seed, size.ingestionRuns, nowMs, historyMs === undefined || size.ingestionRuns < 2 ? undefined : historyMs / (size.ingestionRuns - 1)),
    actions,
    changes: {
      assets: new ChangeLog(seed, 'Asset', trackedAssetNames(size.trackedAssets), size.changesPerRecord, nowMs),
      users: new ChangeLog(seed, 'User', trackedUserNames(size.trackedUsers), size.changesPerRecord, nowMs),
    },
    inventory,
    license: initialLicense(nowMs),
    records: initialRecords(seed, { asset: size.assetRecords, user: size.userRecords }, nowMs, history.all(), mergerNames(specs)),
  };
}

/** New runs of a connector go into the history; a merger's run that did not fail rebuilds its table's records. */
export function addRuns(data: Dataset, spec: ConnectorSpec, rows: readonly ConnectorRow[], rng: Rng): void {
  for (const row of rows) data.history.add(row, rng);
  if (spec.profileKind === 'merger') noteMergerRuns(data.records, rows, mergerNames(data.connectors.values()));
}

/** Everything one simulated stack holds; built by buildDataset, advanced by the timeline. */
export interface Dataset {
  seed: number;
  size: SimulatorSize;
  /** Seconds between connector runs, when set (SimulatorOptions.connectorPeriodSeconds). */
  connectorPeriodS?: number;
  startMs: number;
  connectors: Map<string, ConnectorSpec>;
  history: ConnectorHistory;
  ingestion: IngestionState;
  actions: Map<string, ActionState>;
  changes: { assets: ChangeLog; users: ChangeLog };
  inventory: Inventory;
  license: LicenseRow;
  /** The asset and user records of the data query endpoint, as the mergers last rebuilt them. */
  records: Records;
}
