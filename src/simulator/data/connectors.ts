/**
 * Connectors and their run rows (spec 2.4). A connector runs in cycles: at each due time every one
 * of its profiles has just finished a run, so one cycle adds one row per profile, all in the past.
 * A cycle's content depends only on (seed, bridge name, due time): live ticks, `advance()` and the
 * initial history all produce the same rows for the same times.
 */
import { Rng } from '../random.js';
import { seedTime } from '../day-offset.js';
import {
  CONNECTOR_TEMPLATES,
  EXPECTED_FIELDS,
  PROFILE_TEMPLATES,
  RAW_FIELD_EXPRESSIONS,
  poolName,
  type ConnectorTemplate,
} from '../text.js';
import { runRow } from './connector-row.js';
import type { ConnectorRow, ConnectorSpec, ProfileKind } from './types.js';

/** Each profile of a cycle gets a three-minute slot; runs last 20–170 s. */
const PROFILE_SLOT_S = 180;
const PERIODS_S = [180, 240, 300, 360, 480, 600];
const FIRST_STATUSES = ['Success', 'Error', 'Warning', 'SUCCESS', 'Warning&Error'];
const USUAL_STATUS: ReadonlyArray<readonly [string, number]> = [
  ['Success', 50],
  ['SUCCESS', 20],
  ['Warning', 12],
  ['Warning&Error', 6],
  ['Error', 12],
];

function healthy(usual: string): string {
  return usual === 'SUCCESS' ? 'SUCCESS' : 'Success';
}

/** Status of a run that is not the connector's newest generated one: mostly healthy. */
function incidentalStatus(rng: Rng, usual: string): string {
  return rng.weighted([
    [healthy(usual), 80],
    ['Warning', 12],
    ['Error', 8],
  ]);
}

/**
 * A connector's period: `periodS` when given (every connector on one cadence, e.g. the real service's
 * once a day), else a demo-friendly 3–10 minutes; never shorter than one cycle of its profiles.
 */
export function connectorPeriodMs(rng: Rng, profiles: number, periodS?: number): number {
  return Math.max(periodS ?? rng.pick(PERIODS_S), profiles * PROFILE_SLOT_S + 60) * 1000;
}

function profileKind(t: ConnectorTemplate): ProfileKind {
  if (t.merger) return 'merger';
  if (t.action) return 'action';
  return t.stringProfile ? 'string' : 'object';
}

export interface SpecInput {
  seed: number;
  bridgeName: string;
  template: ConnectorTemplate;
  displayName: string;
  profilesPerConnector: number;
  usualStatus: string;
  nowMs: number;
  /** Where in the profile name pool this connector starts, so names vary across connectors. */
  profileOffset: number;
  /** Seconds between runs for every connector (default: the demo cadence of connectorPeriodMs). */
  periodS?: number | undefined;
}

export function makeConnectorSpec(input: SpecInput): ConnectorSpec {
  const rng = Rng.of(input.seed, 'connector-spec', input.bridgeName);
  const kind = profileKind(input.template);
  const profileCount = kind === 'merger' ? 1 : input.profilesPerConnector;
  const profiles = Array.from({ length: profileCount }, (_, p) => {
    const n = p + input.profileOffset;
    const [name, displayName] = PROFILE_TEMPLATES[n % PROFILE_TEMPLATES.length] as readonly [string, string];
    const round = Math.floor(p / PROFILE_TEMPLATES.length);
    return {
      name: round === 0 ? name : `${name}-${round + 1}`,
      displayName: round === 0 ? displayName : `${displayName} ${round + 1}`,
      createdAt: Math.floor(input.nowMs / 1000) - rng.int(30, 900) * 86_400,
    };
  });
  const missingCount = rng.chance(0.3) ? rng.int(1, 2) : 0;
  const expectedFields = EXPECTED_FIELDS.slice(0, rng.int(4, EXPECTED_FIELDS.length));
  const periodMs = connectorPeriodMs(rng, profileCount, input.periodS);
  return {
    bridgeName: input.bridgeName,
    displayName: input.displayName,
    platform: input.template.platform,
    technology: input.template.technology,
    version: `${rng.int(1, 4)}.${rng.int(0, 12)}.${rng.int(0, 30)}`,
    profileKind: kind,
    profiles,
    usualStatus: input.usualStatus,
    expectedFields,
    rawFields: expectedFields.map((f) => RAW_FIELD_EXPRESSIONS[f] ?? f),
    missingFields: expectedFields.slice(expectedFields.length - missingCount),
    inputRecords: rng.int(40, 60_000),
    periodMs,
    // Strictly after now: nothing is due before the first advance or tick.
    nextRunMs: input.nowMs + rng.int(1, periodMs / 1000) * 1000,
    timed: input.template.timed === true,
    defaultProfileRuns: input.template.defaultProfileRuns === true,
  };
}

/** The i-th connector of a generated dataset. */
export function generatedConnectorSpec(seed: number, i: number, profiles: number, nowMs: number, periodS?: number): ConnectorSpec {
  const template = CONNECTOR_TEMPLATES[i % CONNECTOR_TEMPLATES.length] as ConnectorTemplate;
  const rng = Rng.of(seed, 'connector-status', i);
  return makeConnectorSpec({
    seed,
    bridgeName: poolName(
      CONNECTOR_TEMPLATES.map((t) => t.bridge),
      i,
      (b, k) => `${b}_${k}`,
    ),
    template,
    displayName: poolName(
      CONNECTOR_TEMPLATES.map((t) => t.display),
      i,
      (d, k) => `${d} ${k}`,
    ),
    profilesPerConnector: profiles,
    usualStatus: FIRST_STATUSES[i] ?? rng.weighted(USUAL_STATUS),
    nowMs,
    profileOffset: i % 3,
    periodS,
  });
}

/** A connector added by a scenario control: an API connector with a fresh name. */
export function addedConnectorSpec(seed: number, bridgeName: string, profiles: number, nowMs: number, periodS?: number): ConnectorSpec {
  const template: ConnectorTemplate = { bridge: bridgeName, display: bridgeName, platform: 'api', technology: 'rest' };
  const display = bridgeName.replace(/[_-]+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase());
  return makeConnectorSpec({
    seed,
    bridgeName,
    template,
    displayName: display,
    profilesPerConnector: profiles,
    usualStatus: 'Success',
    nowMs,
    profileOffset: 0,
    periodS,
  });
}

/**
 * The rows of one cycle that completed at `dueMs`, one per profile. `status` forces every row's
 * status (the newest generated cycle, scenario controls); `usual` is mostly the connector's usual
 * status (live cycles); `incidental` is mostly healthy (older history).
 */
export type CycleStatus = { exactly: string } | 'usual' | 'incidental';

export function cycleRows(seed: number, spec: ConnectorSpec, dueMs: number, status: CycleStatus): ConnectorRow[] {
  const rng = Rng.of(seed, 'connector-cycle', spec.bridgeName, seedTime(dueMs));
  const dueS = Math.floor(dueMs / 1000);
  const last = spec.profiles.length - 1;
  return spec.profiles.map((_, p) => {
    let s: string;
    if (status === 'usual') s = rng.chance(0.85) ? spec.usualStatus : incidentalStatus(rng, spec.usualStatus);
    else if (status === 'incidental') s = incidentalStatus(rng, spec.usualStatus);
    else s = status.exactly;
    return runRow(rng, spec, p, dueS - (last - p) * PROFILE_SLOT_S - rng.int(0, 5), s);
  });
}
