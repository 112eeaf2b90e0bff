/**
 * Scenario controls (api.ts ScenarioControls): each changes the data at once, so the next request
 * sees it. Bad arguments throw a ConfigError naming the argument; the admin API turns it into a 400.
 */
import type { ScenarioControls } from './api.js';
import { ConfigError } from '../errors.js';
import { isoDay, parseDay } from './format.js';
import { addedAction } from './data/actions.js';
import { addedConnectorSpec, cycleRows } from './data/connectors.js';
import { profileName } from './data/connector-history.js';
import { runningRun, scheduledRunId } from './data/ingestion.js';
import type { ActionState, ConnectorRow, ConnectorSpec, IngestionRun } from './data/types.js';
import type { Timeline } from './timeline.js';
import { addRuns } from './data/dataset.js';

/** Ten years: more than any test needs, and a guard against a unit slip (ms for s). */
const MAX_ADVANCE_S = 10 * 365 * 86_400;

function reject(path: string, message: string): never {
  throw new ConfigError([{ path, message }]);
}

function requireText(path: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) reject(path, 'must be a non-empty string');
  return value;
}

function requireCount(path: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) reject(path, 'must be an integer >= 0');
  return value;
}

function requireOutcome<T extends string>(value: unknown, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) reject('outcome', `must be one of ${allowed.join(', ')}`);
  return value as T;
}

export function createScenario(timeline: Timeline): ScenarioControls {
  const data = timeline.data;

  const connector = (bridgeName: unknown): ConnectorSpec => {
    const spec = data.connectors.get(requireText('bridgeName', bridgeName));
    return spec ?? reject('bridgeName', `no connector named ${JSON.stringify(bridgeName)}`);
  };
  const action = (actionId: unknown): ActionState => {
    const found = data.actions.get(requireText('actionId', actionId));
    return found ?? reject('actionId', `no Action with id ${JSON.stringify(actionId)}`);
  };

  /** A new cycle of rows, each strictly newer than the run it follows (even with a fixed clock). */
  const appendCycle = (spec: ConnectorSpec, status: string, at?: number): void => {
    const newest = new Map<string, number>();
    for (const row of data.history.runsOf(spec.bridgeName)) {
      newest.set(profileName(row), Math.max(row._time, newest.get(profileName(row)) ?? -Infinity));
    }
    const now = at ?? timeline.now();
    let rows: ConnectorRow[] = cycleRows(data.seed, spec, now, { exactly: status });
    const behind = Math.max(0, ...rows.map((r) => (newest.get(profileName(r)) ?? -Infinity) - r._time + 1));
    if (behind > 0) rows = cycleRows(data.seed, spec, now + behind * 1000 + 6000, { exactly: status });
    addRuns(data, spec, rows, timeline.rng);
  };

  const startIngestion = (outcome: 'success' | 'failed' | 'running'): void => {
    const nowUs = timeline.now() * 1000;
    const previous = runningRun(data.ingestion);
    if (previous) timeline.finishIngestion(previous, previous.plannedOutcome, nowUs);
    const newestStart = Math.max(-Infinity, ...data.ingestion.runs.map((r) => r.startUs));
    // A run that finishes at once is given a minute of history, but still starts after every other.
    const wanted = outcome === 'running' ? nowUs : nowUs - 60_000_000;
    const startUs = Math.max(wanted, Math.floor(newestStart / 1_000_000) * 1_000_000 + 1_000_000);
    let id = scheduledRunId(Math.floor(startUs / 1000));
    for (let bump = 1; data.ingestion.runs.some((r) => r.id === id); bump++) {
      id = scheduledRunId(Math.floor(startUs / 1000) + bump * 1000);
    }
    const run: IngestionRun = { id, startUs, plannedOutcome: 'success', status: 'running' };
    timeline.pushIngestionRun(run);
    if (outcome !== 'running') timeline.finishIngestion(run, outcome, Math.max(nowUs, startUs + 1000));
  };

  return {
    setLicenseExpiry(date) {
      const day = parseDay(requireText('date', date));
      if (day === undefined) reject('date', 'must be a real day as yyyy-mm-dd');
      data.license.expireDate = isoDay(day);
    },
    runConnector(bridgeName, status, holdSeconds) {
      const spec = connector(bridgeName);
      const checked = requireText('status', status);
      if (holdSeconds !== undefined && (typeof holdSeconds !== 'number' || !Number.isFinite(holdSeconds) || holdSeconds < 0 || holdSeconds > MAX_ADVANCE_S)) {
        reject('holdSeconds', `must be a number of seconds from 0 to ${MAX_ADVANCE_S}`);
      }
      appendCycle(spec, checked);
      if (holdSeconds !== undefined && holdSeconds > 0) spec.held = { status: checked, untilMs: timeline.now() + holdSeconds * 1000 };
      else delete spec.held;
    },
    runIngestion(outcome) {
      startIngestion(requireOutcome(outcome, ['success', 'failed', 'running'] as const));
    },
    finishIngestion(outcome) {
      const checked = requireOutcome(outcome, ['success', 'failed'] as const);
      const run = runningRun(data.ingestion);
      if (run) timeline.finishIngestion(run, checked, timeline.now() * 1000);
    },
    runActionJob(actionId, status) {
      const found = action(actionId);
      const checked = requireText('status', status);
      const newest = Math.max(-Infinity, ...found.jobs.map((j) => j.atMs));
      timeline.addJob(found, Math.max(timeline.now(), newest + 1000), checked);
    },
    removeConnector(bridgeName) {
      const spec = connector(bridgeName);
      data.connectors.delete(spec.bridgeName);
      data.history.removeBridge(spec.bridgeName);
    },
    addConnector(bridgeName, status = 'Success', lastRunSecondsAgo = 0) {
      const name = requireText('bridgeName', bridgeName);
      const checked = requireText('status', status);
      if (typeof lastRunSecondsAgo !== 'number' || !Number.isFinite(lastRunSecondsAgo) || lastRunSecondsAgo < 0) {
        reject('lastRunSecondsAgo', 'must be a number of seconds >= 0');
      }
      if (data.connectors.has(name)) reject('bridgeName', `a connector named ${JSON.stringify(name)} exists`);
      const spec = addedConnectorSpec(data.seed, name, data.size.profilesPerConnector, timeline.now(), data.connectorPeriodS);
      // A connector that last ran long ago has stopped: it is never due again.
      if (lastRunSecondsAgo > 0) spec.nextRunMs = Number.MAX_SAFE_INTEGER;
      data.connectors.set(name, spec);
      appendCycle(spec, checked, timeline.now() - lastRunSecondsAgo * 1000);
    },
    removeAction(actionId) {
      data.actions.delete(action(actionId).key);
    },
    addAction(actionId, name) {
      const key = requireText('actionId', actionId);
      if (data.actions.has(key)) reject('actionId', `an Action with id ${JSON.stringify(key)} exists`);
      if (name !== undefined) requireText('name', name);
      data.actions.set(key, addedAction(data.seed, key, name, timeline.now()));
    },
    setAssetCount(count) {
      data.inventory.assetCount = requireCount('count', count);
    },
    setUserCount(count) {
      data.inventory.userCount = requireCount('count', count);
    },
    rebuild() {
      const mergers = [...data.connectors.values()].filter((s) => s.profileKind === 'merger');
      if (mergers.length === 0) reject('rebuild', 'the dataset has no merger (platform ML-ENGINE): give it at least 7 connectors');
      for (const spec of mergers) appendCycle(spec, 'Success');
    },
    advance(seconds) {
      if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX_ADVANCE_S) {
        reject('seconds', `must be a number from 0 to ${MAX_ADVANCE_S}`);
      }
      timeline.advance(seconds);
    },
  };
}
