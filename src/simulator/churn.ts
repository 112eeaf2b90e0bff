/**
 * Churn for soak tests: on every step, entities come and go (connectors and Actions replaced by new
 * ones with new names) and status texts change (the newest run of some connectors and the newest job
 * of some Actions get a status never seen before). Steady state: the number of entities stays the same, so an
 * exporter's series should stay flat whatever the names and texts.
 */
import type { ScenarioControls } from './api.js';

export interface ChurnOptions {
  /** Milliseconds between steps (wall clock). */
  everyMs: number;
  /** Connectors and Actions replaced per step (default 2). */
  entities?: number;
  /** Give some connectors and Actions a status text never seen before on each step (default true). */
  statusTexts?: boolean;
  /** How many connectors and how many Actions get new status texts (default 3 each). */
  statusTargets?: number;
}

export interface ChurnTarget {
  scenario: ScenarioControls;
  /** Connectors and Actions that always exist, whose status texts change. */
  connectors?: readonly string[];
  actionIds?: readonly string[];
}

/** One step of churn, number `n` (0, 1, 2, …): replaces step n-1's entities with step n's. */
export function churnStep(target: ChurnTarget, n: number, opts: Omit<ChurnOptions, 'everyMs'> = {}): void {
  const { scenario } = target;
  const entities = opts.entities ?? 2;
  for (let k = 0; k < entities; k++) {
    if (n > 0) {
      scenario.removeConnector(`churn_connector_${n - 1}_${k}`);
      scenario.removeAction(`churn-${n - 1}-${k}`);
    }
    scenario.addConnector(`churn_connector_${n}_${k}`, 'Success');
    scenario.addAction(`churn-${n}-${k}`, `Churn Action ${n}.${k}`);
  }
  if (opts.statusTexts ?? true) {
    const count = opts.statusTargets ?? 3;
    for (const connector of (target.connectors ?? []).slice(0, count)) scenario.runConnector(connector, `Error (attempt ${n})`);
    for (const actionId of (target.actionIds ?? []).slice(0, count)) scenario.runActionJob(actionId, `FAILED_STEP_${n}`);
  }
}

/** Runs churn steps on an unref'd timer; returns the function that stops it. */
export function startChurn(target: ChurnTarget, opts: ChurnOptions): () => void {
  let n = 0;
  churnStep(target, n++, opts);
  const timer = setInterval(() => churnStep(target, n++, opts), opts.everyMs).unref();
  return () => clearInterval(timer);
}
