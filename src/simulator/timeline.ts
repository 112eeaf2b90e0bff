/**
 * Simulated time. The clock is the configured clock plus whatever `advance()` added; `catchUp()`
 * runs everything that fell due since the last call: ingestion runs start and finish, connectors run,
 * Actions produce jobs and counts drift. Live mode calls it from one timer; tests call advance().
 * Work due long ago is skipped down to what the history keeps, so a big jump stays cheap.
 */
import { Rng } from './random.js';
import { seedTime } from './day-offset.js';
import { isoUtc } from './format.js';
import { addJob, makeJob } from './data/actions.js';
import { cycleRows } from './data/connectors.js';
import { INGESTION_PERIOD_MS, finishRun, runningRun, scheduledRun } from './data/ingestion.js';
import { driftMinute } from './data/inventory.js';
import { addRuns, type Dataset } from './data/dataset.js';
import type { ActionState, ConnectorSpec, IngestionRun } from './data/types.js';

const MINUTE_MS = 60_000;
/** Drift is a random walk; a day of steps is plenty after a long jump. */
const MAX_DRIFT_STEPS = 1440;

/**
 * Due times from `next` up to `until`, without those that `keep` newer ones would push out anyway;
 * returns them and the new next. Whole rounds of `keep` are skipped, so a new run lands in the same
 * slot of the history whether time moved in one jump or in many steps.
 */
export function dueTimes(next: number, period: number, until: number, keep: number): { due: number[]; next: number } {
  if (next > until) return { due: [], next };
  const count = Math.floor((until - next) / period) + 1;
  const skip = keep <= 0 ? count : Math.floor(Math.max(0, count - keep) / keep) * keep;
  const due: number[] = [];
  for (let k = skip; k < count; k++) due.push(next + k * period);
  return { due, next: next + count * period };
}

function delayedRun(run: IngestionRun, startUs: number): IngestionRun {
  const shift = startUs - run.startUs;
  return { ...run, startUs, plannedEndUs: (run.plannedEndUs as number) + shift };
}

export class Timeline {
  private offsetMs = 0;
  private processedMs: number;
  private lastDriftMs: number;
  /** For what scenario controls add: order-dependent, still deterministic. */
  readonly rng: Rng;

  constructor(
    readonly data: Dataset,
    private readonly baseClock: () => number,
  ) {
    this.processedMs = data.startMs;
    this.lastDriftMs = data.startMs;
    this.rng = Rng.of(data.seed, 'scenario');
  }

  now(): number {
    return this.baseClock() + this.offsetMs;
  }

  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
    this.catchUp();
  }

  catchUp(): void {
    const t = this.now();
    if (t < this.processedMs) return;
    this.ingestion(t);
    for (const spec of this.data.connectors.values()) this.connector(spec, t);
    for (const action of this.data.actions.values()) this.batchAction(action, t);
    this.drift(t);
    this.processedMs = t;
  }

  /** Finish a running ingestion run; a success triggers the AFTER_DATA_INGESTION Actions. */
  finishIngestion(run: IngestionRun, outcome: 'success' | 'failed', atUs: number): void {
    finishRun(run, outcome, atUs);
    if (outcome !== 'success') return;
    // At the run's end, never after the clock: a job is recorded once it has run.
    const atMs = Math.floor((run.endUs as number) / 1000);
    for (const action of this.data.actions.values()) {
      if (action.row.scheduleType === 'AFTER_DATA_INGESTION') this.addJob(action, atMs);
    }
  }

  /** Record a job run at `atMs` (a second later if the Action already has one then: ids stay unique). */
  addJob(action: ActionState, atMs: number, status?: string): void {
    let at = atMs;
    while (action.jobs.some((j) => j.atMs === at)) at += 1000;
    addJob(action, makeJob(this.data.seed, action.key, at, status), Math.max(1, this.data.size.jobsPerAction));
  }

  /** Append an ingestion run, dropping the oldest beyond the history size. */
  pushIngestionRun(run: IngestionRun): void {
    const runs = this.data.ingestion.runs;
    runs.push(run);
    const keep = Math.max(1, this.data.size.ingestionRuns);
    if (runs.length > keep) runs.splice(0, runs.length - keep);
  }

  private finishDue(untilUs: number): void {
    for (const run of this.data.ingestion.runs) {
      if (run.status === 'running' && run.plannedEndUs !== undefined && run.plannedEndUs <= untilUs) {
        this.finishIngestion(run, run.plannedOutcome, run.plannedEndUs);
      }
    }
  }

  private ingestion(t: number): void {
    const state = this.data.ingestion;
    if (this.data.size.ingestionRuns === 0) return;
    // Keep enough slots for the AFTER_DATA_INGESTION jobs they trigger, too.
    const keep = Math.max(this.data.size.ingestionRuns, this.data.size.jobsPerAction) + 1;
    const { due } = dueTimes(state.nextSlotMs, INGESTION_PERIOD_MS, t, keep);
    for (const slot of due) {
      let run = scheduledRun(this.data.seed, slot);
      // One run at a time: a slot waits for the scheduled run still going (a run started by hand,
      // with no planned end, makes the scheduler skip the slot instead; see below).
      const current = runningRun(state);
      if (current?.plannedEndUs !== undefined && current.plannedEndUs >= run.startUs) {
        run = delayedRun(run, current.plannedEndUs + 1_000_000);
      }
      if (run.startUs > t * 1000) break; // due, but it starts later: next tick
      state.nextSlotMs = slot + INGESTION_PERIOD_MS;
      this.finishDue(run.startUs);
      if (!runningRun(state)) this.pushIngestionRun(run);
    }
    this.finishDue(t * 1000);
  }

  private connector(spec: ConnectorSpec, t: number): void {
    const { due, next } = dueTimes(spec.nextRunMs, spec.periodMs, t, this.data.size.runsPerConnector);
    spec.nextRunMs = next;
    for (const at of due) {
      const status = spec.held !== undefined && at <= spec.held.untilMs ? { exactly: spec.held.status } : 'usual';
      addRuns(this.data, spec, cycleRows(this.data.seed, spec, at, status), this.rng);
    }
    if (spec.held !== undefined && spec.held.untilMs < t) delete spec.held;
  }

  private batchAction(action: ActionState, t: number): void {
    if (action.periodMs === undefined || action.nextRunMs === undefined) return;
    const { due, next } = dueTimes(action.nextRunMs, action.periodMs, t, this.data.size.jobsPerAction);
    action.nextRunMs = next;
    action.row.nextRunAt = isoUtc(next);
    for (const at of due) this.addJob(action, at);
  }

  private drift(t: number): void {
    const minutes = Math.floor((t - this.lastDriftMs) / MINUTE_MS);
    if (minutes <= 0) return;
    for (let m = Math.max(0, minutes - MAX_DRIFT_STEPS); m < minutes; m++) {
      driftMinute(this.data.inventory, Rng.of(this.data.seed, 'drift', seedTime(this.lastDriftMs + (m + 1) * MINUTE_MS)));
    }
    this.lastDriftMs += minutes * MINUTE_MS;
  }
}
