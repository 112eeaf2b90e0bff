import type { DataEndpoint, EndpointInputs } from '../api/endpoints.js';
import type { Sample } from '../metrics/sample.js';
import type { StateMemory } from './state-memory.js';

export interface CollectorContext {
  /** Unix time in seconds of the poll (a fixed clock in tests). */
  readonly now: number;
  /** IANA zone for times sent without one (`yyyy-mm-dd HH:mm:ss`); the stack's `timezone`, default UTC. */
  readonly timeZone: string;
  /** State-set memory of this stack. */
  readonly states: StateMemory;
  /** Debug log for a value that could not be parsed (its sample is dropped). */
  readonly debug: (message: string, fields?: Record<string, unknown>) => void;
}

/** A pure mapping from one endpoint's validated response to samples. No I/O, no timers, no globals. */
export type Collector<E extends DataEndpoint> = (input: EndpointInputs[E], ctx: CollectorContext) => Sample[];
export type CollectorTable = { readonly [E in DataEndpoint]: Collector<E> };
