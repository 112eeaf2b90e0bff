/**
 * A real first poll under the default request budget, for the small size only: larger sizes would
 * take minutes, so their figures are computed from the request counts (bench/budget.ts).
 */
import { burstFor } from '../src/cmdb/budget.js';
import { budgetSeconds, DEFAULT_RATE } from './budget.js';
import { startChild, type Child } from './children.js';
import type { BudgetFigures } from './results.js';
import { exporterInput, pollRun, startSimulatorProcess, type Progress } from './size-run.js';
import type { BenchSize } from './sizes.js';

export async function measureBudget(size: BenchSize | undefined, progress: Progress): Promise<BudgetFigures> {
  const figures = { ratePerMinute: DEFAULT_RATE, burst: burstFor(DEFAULT_RATE) };
  if (!size) return figures;
  progress(`[budget] first poll of the ${size.name} size at the default ${DEFAULT_RATE} requests/min`);
  const { child: simChild, sim } = await startSimulatorProcess(size);
  let exporter: Child | undefined;
  try {
    exporter = await startChild('exporter-process.ts', []);
    await exporter.call('start', exporterInput(sim, DEFAULT_RATE));
    const run = await pollRun(sim, exporter);
    const measured = {
      size: size.name,
      requests: run.requests,
      wallSeconds: run.wallMs / 1000,
      modelSeconds: budgetSeconds(run.requests, DEFAULT_RATE),
    };
    return { ...figures, measured };
  } finally {
    await exporter?.call('close').catch(() => undefined);
    await exporter?.stop();
    await simChild.stop();
  }
}
