/**
 * The three data sizes the benchmark measures. Medium and large follow the brief: about 1,000 and
 * 10,000 connector profiles with three runs each (merger connectors have a single profile, hence
 * 530 and 5,300 connectors), 200 and 1,000 Actions, 50 and 200 tracked names.
 */
import type { SimulatorSize } from '../src/simulator/api.js';

export type SizeName = 'small' | 'medium' | 'large';

export interface BenchSize {
  readonly name: SizeName;
  /** Knobs passed to the simulator; the rest keep their defaults. */
  readonly knobs: Partial<SimulatorSize>;
}

export const SIZES: readonly BenchSize[] = [
  { name: 'small', knobs: {} },
  {
    name: 'medium',
    knobs: { connectors: 530, profilesPerConnector: 2, runsPerConnector: 3, actions: 200, trackedAssets: 25, trackedUsers: 25 },
  },
  {
    name: 'large',
    knobs: { connectors: 5300, profilesPerConnector: 2, runsPerConnector: 3, actions: 1000, trackedAssets: 100, trackedUsers: 100 },
  },
];

export function sizeByName(name: string): BenchSize | undefined {
  return SIZES.find((s) => s.name === name);
}

/** The exporter's series cap, raised so that the whole data set is exported and measured (config allows up to this). */
export const BENCH_MAX_SERIES = 10_000_000;
/** Request budget for the poll figures: high enough that the exporter's own cost is measured, not the budget. */
export const RAISED_RATE = 6_000_000;
/** Runs of the swap cell: its figures are the median run's, as one run moves a lot on a busy machine. */
export const SWAP_RUNS = 3;
